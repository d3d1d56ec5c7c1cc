# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Lab 03 playground: look inside your attention
#
# This notebook runs **your** `attention.py`, the file next to it, one step at a time: the shapes
# after each step, the causal mask, heatmaps of the weights, a padding experiment, the
# divisibility check, and a comparison with PyTorch's own attention. These cells are not graded;
# the tests are, and the last cell runs the public ones and shows your points as `make test` does
# (section 10). The handout is [docs/lab.md](../docs/lab.md).
#
# **Work loop:** edit `attention.py`, re-run the code cell that starts with `import importlib` (the
# second code cell: it reloads your file; on Colab, run the upload cell before it), then the cell you
# are working on. A cell that needs a function you have not written yet prints one line saying so
# instead of a traceback. To see your points, run the self-check cell at the end.

# %% [markdown]
# **On Google Colab?** Colab starts with no `attention.py`. Run the next cell: it asks you to upload
# yours (`assignment/attention.py` of your repository). Or paste your repository's HTTPS address into
# `REPOSITORY_URL` first and it clones the repository instead. A private repository (GitHub Classroom
# makes them private) cannot be cloned without a token; uploading the file is simpler and puts no
# secret into the notebook. Changed your file? Run this cell again: the new upload (or a fresh pull)
# replaces the `attention.py` Colab has, and the next cell reloads it. On your own machine this cell does
# nothing.

# %%
import shutil
import subprocess
from pathlib import Path

REPOSITORY_URL = ""  # Colab only, optional: e.g. "https://github.com/your-course/lab03-yourname.git"

try:
    from google.colab import files  # only on Colab
except ImportError:
    files = None

if files is not None:  # on Colab: each run fetches attention.py again and replaces the one before
    if REPOSITORY_URL:
        if Path("repository").exists():
            subprocess.run(["git", "-C", "repository", "pull", "--quiet"], check=True)
        else:
            subprocess.run(["git", "clone", "--quiet", "--depth", "1", REPOSITORY_URL, "repository"], check=True)
        shutil.copy(Path("repository", "assignment", "attention.py"), "attention.py")
    else:
        uploaded = files.upload()  # choose your attention.py
        name = next((name for name in uploaded if name.endswith(".py")), None)
        if name is None:
            raise FileNotFoundError("upload your attention.py (assignment/attention.py in your repository)")
        if name != "attention.py":
            Path(name).replace("attention.py")  # the browser names a second upload "attention (1).py"
    print("attention.py is ready:", Path("attention.py").resolve())

# %%
import importlib
import math
from contextlib import contextmanager

import attention
import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

attention = importlib.reload(attention)  # picks up your latest edits each time this cell runs
torch.set_printoptions(precision=3, sci_mode=False)


@contextmanager
def your_code():
    """Run a block that calls attention.py; a missing function prints one line, not a traceback."""
    try:
        yield
    except NotImplementedError as error:
        missing = str(error) or "a function this cell calls is not implemented yet"
        print(f"[skipped] {missing}: write it in attention.py, re-run the `import importlib` cell, then this one.")


def show(panels):
    """Heatmaps of [Tq, Tk] weights, one per {title: weights} entry, on a 0..1 colour scale."""
    fig, axes = plt.subplots(1, len(panels), figsize=(3.3 * len(panels) + 0.8, 3.2),
                             squeeze=False, layout="constrained")
    for ax, (title, weights) in zip(axes[0], panels.items(), strict=True):
        image = ax.imshow(weights.detach().float(), vmin=0.0, vmax=1.0)
        ax.set(title=title, xlabel="key position", ylabel="query position")
    fig.colorbar(image, ax=axes[0].tolist())
    plt.show()


# %% [markdown]
# ## 0. Inputs
#
# One batch item, two heads, five positions, four features per head. Queries, keys and values
# all have the layout `[B, H, T, d]`.

# %%
B, H, T, d = 1, 2, 5, 4
g = torch.Generator().manual_seed(0)
q, k, v = (torch.randn(B, H, T, d, generator=g) for _ in range(3))
print("q, k, v:", tuple(q.shape), "= [B, H, T, d]")

# %% [markdown]
# ## 1. Scores: every query against every key
#
# `scores[..., i, j]` is the dot product of query $i$ with key $j$, times $1/\sqrt{d}$. The last
# two dims of the result are `[Tq, Tk]`: one row per query, one column per key.

# %%
with your_code():
    scores = attention.attention_scores(q, k)
    print("scores:", tuple(scores.shape), "= [B, H, Tq, Tk]")
    one_entry = torch.dot(q[0, 0, 1], k[0, 0, 3]) / math.sqrt(d)
    print(f"scores[0, 0, 1, 3] = {scores[0, 0, 1, 3]:.4f}, q[1] . k[3] / sqrt(d) = {one_entry:.4f}")

# %% [markdown]
# ### Why $1/\sqrt{d}$?
#
# A dot product of $d$ independent unit-variance numbers has variance about $d$. Wide heads
# ($d = 256$ here) give huge scores unless they are scaled, and the softmax of huge scores is
# nearly one-hot: one key takes almost all the weight and the gradients vanish.

# %%
with your_code():
    g = torch.Generator().manual_seed(1)
    wide_q, wide_k = (torch.randn(1, 1, 64, 256, generator=g) for _ in range(2))
    for scale, label in ((1.0, "unscaled"), (None, "1/sqrt(d)")):
        wide_scores = attention.attention_scores(wide_q, wide_k, scale=scale)
        largest = attention.attention_weights(wide_scores).max(dim=-1).values.mean()
        print(f"{label:>9}: score variance {wide_scores.var():6.1f}, "
              f"average largest weight in a row {largest:.2f}")

# %% [markdown]
# ## 2. The causal mask
#
# `True` means *allowed*. Row $i$ is query $i$: it may look at keys $0..i$ (its past and itself),
# never at the future.

# %%
with your_code():
    mask = attention.causal_mask(T)
    print(mask.int())  # 1 = True = allowed, 0 = blocked
    show({f"causal_mask({T})": mask})

# %% [markdown]
# ## 3. Weights: a masked softmax over the keys
#
# Blocked keys get exactly 0; each row sums to 1 over the keys it may see.

# %%
with your_code():
    scores = attention.attention_scores(q, k)
    free = attention.attention_weights(scores)
    causal = attention.attention_weights(scores, attention.causal_mask(T))
    print("weights:", tuple(causal.shape), "= [B, H, Tq, Tk]")
    print("row sums:", causal.sum(dim=-1)[0, 0])
    print("largest weight above the diagonal:", causal[0, 0].triu(1).max().item())
    show({"no mask": free[0, 0], "causal mask": causal[0, 0]})

# %% [markdown]
# ## 4. The whole step: `scaled_dot_product_attention`
#
# `output = weights @ v`, shape `[B, H, Tq, dv]`. Here 3 queries attend over 5 keys, and the
# values have 6 features, so every dim has its own size. With `is_causal=True` and
# `Tq != Tk` the mask is aligned to the top-left corner: query $i$ sees keys $0..i$.

# %%
with your_code():
    g = torch.Generator().manual_seed(2)
    q3 = torch.randn(B, H, 3, d, generator=g)
    v6 = torch.randn(B, H, T, 6, generator=g)
    output, weights = attention.scaled_dot_product_attention(q3, k, v6, is_causal=True)
    print("q", tuple(q3.shape), " k", tuple(k.shape), " v", tuple(v6.shape))
    print("output", tuple(output.shape), "= [B, H, Tq, dv]")
    print("weights", tuple(weights.shape), "= [B, H, Tq, Tk]")
    show({f"head {h}, is_causal": weights[0, h] for h in range(H)})

# %% [markdown]
# ## 5. Try it yourself: padding in the middle of a sentence
#
# Say positions 1 and 3 hold padding tokens. A bool mask of shape `[B, 1, 1, Tk]` blocks those
# keys for every head and every query. Change `blocked` and re-run: which columns go dark, and
# what happens to the other weights of each row?

# %%
blocked = [1, 3]
padding = torch.ones(B, 1, 1, T, dtype=torch.bool)  # True = allowed
padding[..., blocked] = False

with your_code():
    _, before = attention.scaled_dot_product_attention(q, k, v)
    _, after = attention.scaled_dot_product_attention(q, k, v, mask=padding)
    print("largest weight on a blocked key:", after[..., blocked].max().item())
    kept = before * padding
    renormalised = kept / kept.sum(dim=-1, keepdim=True)
    print("the other weights are the old ones rescaled to sum to 1:", torch.allclose(after, renormalised))
    show({"no mask": before[0, 0], f"keys {blocked} blocked": after[0, 0]})

# %% [markdown]
# When **every** key of a row is blocked there is nothing to attend to. The lab's rule (and
# PyTorch's): that row gets all-zero weights and an all-zero output, not NaN.

# %%
with your_code():
    nothing = torch.zeros(B, 1, 1, T, dtype=torch.bool)
    output, weights = attention.scaled_dot_product_attention(q, k, v, mask=nothing)
    print("weights of query 0:", weights[0, 0, 0])
    print("output of query 0: ", output[0, 0, 0])

# %% [markdown]
# ## 6. Compare with PyTorch
#
# Your `attention.py` must not call `F.scaled_dot_product_attention`, but this notebook may. It
# returns no weights; passing the identity matrix as `v` makes its output *be* the weights.

# %%
eye = torch.eye(T).expand(B, H, T, T)
cases = {"no mask": {}, "is_causal": {"is_causal": True}, "padding mask": {"mask": padding}}

with your_code():
    for name, options in cases.items():
        mine, mine_weights = attention.scaled_dot_product_attention(q, k, v, **options)
        torch_options = {"attn_mask": options.get("mask"), "is_causal": options.get("is_causal", False)}
        theirs = F.scaled_dot_product_attention(q, k, v, **torch_options)
        theirs_weights = F.scaled_dot_product_attention(q, k, eye, **torch_options)
        print(f"{name:>12}: largest difference in output {(mine - theirs).abs().max():.1e}, "
              f"in weights {(mine_weights - theirs_weights).abs().max():.1e}")

# %% [markdown]
# ## 7. Heads: split and merge
#
# `split_heads` turns `[B, T, d_model]` into `[B, H, T, d_head]`; head $h$ holds features
# $h \cdot d_{head}$ to $(h+1) \cdot d_{head} - 1$. `merge_heads` puts them back.

# %%
x = torch.randn(2, T, 12, generator=torch.Generator().manual_seed(3))

with your_code():
    heads = attention.split_heads(x, 3)
    print("x", tuple(x.shape), "= [B, T, d_model]  ->  split_heads(x, 3)", tuple(heads.shape), "= [B, H, T, d_head]")
    print("head 1 holds features 4..7:", torch.equal(heads[:, 1], x[..., 4:8]))
    print("merge_heads undoes split_heads:", torch.equal(attention.merge_heads(heads), x))

# %% [markdown]
# ## 8. Multi-head attention
#
# Four heads of width 4 share a model width of 16. The check at the end copies your weights into
# `nn.MultiheadAttention`; mind its mask convention, the opposite of ours (True = *blocked*).

# %%
with your_code():
    torch.manual_seed(0)
    mha = attention.MultiHeadAttention(d_model=16, n_heads=4)
    x = torch.randn(2, 6, 16)
    with torch.no_grad():
        output, weights = mha(x, is_causal=True)
    print("w_q.weight", tuple(mha.w_q.weight.shape), "= [d_model, d_model]")
    print("output", tuple(output.shape), "= [B, T, d_model]; weights", tuple(weights.shape), "= [B, H, T, T]")
    show({f"head {h}": weights[0, h] for h in range(4)})

    reference = torch.nn.MultiheadAttention(16, 4, batch_first=True)
    with torch.no_grad():
        reference.in_proj_weight.copy_(torch.cat([mha.w_q.weight, mha.w_k.weight, mha.w_v.weight]))
        reference.in_proj_bias.copy_(torch.cat([mha.w_q.bias, mha.w_k.bias, mha.w_v.bias]))
        reference.out_proj.weight.copy_(mha.w_o.weight)
        reference.out_proj.bias.copy_(mha.w_o.bias)
        future = ~attention.causal_mask(6)  # nn.MultiheadAttention wants True where BLOCKED
        theirs, theirs_weights = reference(x, x, x, attn_mask=future, average_attn_weights=False)
    print(f"largest difference from nn.MultiheadAttention: output {(output - theirs).abs().max():.1e}, "
          f"weights {(weights - theirs_weights).abs().max():.1e}")

# %% [markdown]
# ## 9. Try it yourself: 16 features, 5 heads
#
# 16 features cannot be cut into 5 equal heads, so the constructor must refuse with the lab's
# `DimensionMismatchError`.

# %%
with your_code():
    try:
        attention.MultiHeadAttention(d_model=16, n_heads=5)
    except attention.DimensionMismatchError as error:
        print("DimensionMismatchError:", error)
    else:
        print("No error raised: check d_model % n_heads in __init__ and raise DimensionMismatchError.")

# %% [markdown]
# ## 10. Self-check: the public tests, as `make test` shows them
#
# Run this cell to grade the `attention.py` beside this notebook (on Colab: the one you uploaded) with
# the public tests. It prints the table `make test` prints: each task's points and, for each task that
# lost points, what is wrong and a hint.
#
# - **On your machine** it runs your checkout's grader with its `.venv` Python, exactly as `make test`
#   does, and uses no network. (A copy of the notebook outside your checkout: set the environment
#   variable `LAB03_CHECKOUT` to the checkout's folder.)
# - **On Colab** its first run fetches the lab's public template (the public tests and the grader, no
#   solutions) with `git clone`, and installs pytest and pytest-json-report (Colab has torch); later
#   runs reuse that copy. Colab's torch is not the version the lab pins, so in a rare case a result can
#   differ from `make test`'s.
#
# Your grade is not this table: GitHub Classroom records the public tests' points when you push, and
# hidden tests check the same tasks after the deadline.

# %%
import importlib.metadata
import os
import shutil
import subprocess
import sys
from pathlib import Path

LAB_TEMPLATE = "https://github.com/COURSE/lab03-template.git"  # the lab's public template: tests and grader
GRADER_PACKAGES = ("pytest", "pytest-json-report")  # what grading needs beyond torch, pinned as make install pins them


def is_checkout(folder):
    return (folder / "grader" / "__main__.py").is_file() and (folder / "tests" / "public").is_dir()


def local_checkout():
    """$LAB03_CHECKOUT, else the checkout this notebook is in; None if neither (no network is tried)."""
    given = os.environ.get("LAB03_CHECKOUT")
    if given:
        if not is_checkout(Path(given)):
            print(f"[self-check] LAB03_CHECKOUT={given} holds no grader/ and tests/public/: name your checkout's "
                  "folder, or unset it")
        return Path(given).resolve() if is_checkout(Path(given)) else None
    return next((folder for folder in (Path.cwd(), *Path.cwd().parents) if is_checkout(folder)), None)


def on_colab():
    try:
        import google.colab  # noqa: F401  (only on Colab)
    except ImportError:
        return False
    return True


def pins(checkout):
    """The versions of GRADER_PACKAGES that the checkout's requirements.txt pins."""
    wanted = {}
    for line in (checkout / "requirements.txt").read_text().splitlines():
        name, _, version = line.split("#")[0].strip().partition("==")
        if name.lower() in GRADER_PACKAGES and version:
            wanted[name.lower()] = version
    return wanted


def installed(name):
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def colab_checkout():
    """The template cloned into ~/.cache/lab03-template once per Colab session, and its grader's packages;
    None, after one line saying why, if that fails."""
    clone = Path.home() / ".cache" / "lab03-template"
    if is_checkout(clone):
        print(f"[self-check] reusing the lab's tests in {clone}")
    else:
        print(f"[self-check] fetching the lab's public tests and grader from {LAB_TEMPLATE} (once per session)")
        partial = clone.with_name(clone.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.parent.mkdir(parents=True, exist_ok=True)
        try:
            cloned = subprocess.run(["git", "clone", "--quiet", "--depth", "1", LAB_TEMPLATE, str(partial)],
                                    capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired) as error:
            print(f"[self-check] git clone {LAB_TEMPLATE} failed ({error}): check the runtime's internet, "
                  "or run `make test` on your machine")
            return None
        if cloned.returncode != 0 or not is_checkout(partial):
            why = (cloned.stderr.strip().splitlines() or ["it holds no grader/ and tests/public/"])[-1]
            print(f"[self-check] git clone {LAB_TEMPLATE} failed ({why}): check the runtime's internet, "
                  "or run `make test` on your machine")
            return None
        shutil.rmtree(clone, ignore_errors=True)
        partial.rename(clone)  # only a complete clone is ever reused
    missing = [f"{name}=={version}" for name, version in pins(clone).items() if installed(name) != version]
    if missing:
        print("[self-check] installing", " ".join(missing))
        pip = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", *missing],
                             capture_output=True, text=True)
        if pip.returncode != 0:
            print(f"[self-check] pip install {' '.join(missing)} failed: {pip.stderr.strip()[-300:]}")
            return None
    return clone


def self_check():
    impl = Path.cwd() / "attention.py"
    if not impl.is_file():
        print("[self-check] no attention.py beside this notebook: on Colab, run the upload cell first")
        return
    checkout = local_checkout()
    python = sys.executable
    if checkout is not None:
        venv = checkout / ".venv" / "bin" / "python"  # the Python `make test` runs
        python = str(venv) if venv.is_file() else python
    elif os.environ.get("LAB03_CHECKOUT"):
        return  # local_checkout() said what is wrong with it
    elif on_colab():  # only there is the network used
        checkout = colab_checkout()
        if checkout is None:
            return  # colab_checkout() said why
    else:
        print("[self-check] this notebook is not in a checkout of the lab: run `make test` in your checkout, "
              "or set LAB03_CHECKOUT to its folder")
        return
    graded = subprocess.run([python, "-m", "grader", "grade", "--suite", "public", "--impl", str(impl)],
                            cwd=checkout, capture_output=True, text=True)
    print(graded.stdout, end="")
    if graded.returncode == 2:  # the grader's own failure, never your code's: say what it was
        print(graded.stderr.strip()[-2000:])


self_check()
