"""Do-nothing submissions: whole attention.py sources that must earn nothing.

Each degenerate gives every public function and method of the stubs (assignment/attention.py, with
their signatures) a body that does not do the task: right-shaped zeros, ones, a uniform average,
`return None`, or the inputs handed back unchanged. `python -m instructor.mutants` grades them: a test
that awards one a point outside its `allowed` tasks is a defect, and so is any "Likely cause" line
it gets (nothing is wrong in a known way when nothing is done).

`allowed` names the tasks a degenerate really does: one that keeps raising DimensionMismatchError
when n_heads does not divide d_model may earn the divisibility points.
"""

import ast
import textwrap
from dataclasses import dataclass


@dataclass(frozen=True)
class Degenerate:
    name: str  # snake_case id, also the folder name
    description: str
    bodies: dict  # {"function" or "Class.method": body source}, one for each of the stubs'
    allowed: frozenset = frozenset()  # task ids where it may earn points
    helpers: str = ""  # module-level code the bodies use


class StubMismatch(Exception):
    """A degenerate's bodies no longer match the stubs' functions and methods."""


def public_api(stubs):
    """The qualified names of the stubs' functions and methods a submission writes."""
    names = []
    for node in ast.parse(stubs).body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            names.append(node.name)
        elif isinstance(node, ast.ClassDef):
            names.extend(f"{node.name}.{item.name}" for item in node.body if isinstance(item, ast.FunctionDef))
    return names


def _function(node, body, indent=""):
    header = f"{indent}def {node.name}({ast.unparse(node.args)}):\n"
    return header + textwrap.indent(textwrap.dedent(body).strip("\n") + "\n", indent + "    ")


def _class(node, bodies):
    bases = ", ".join(ast.unparse(base) for base in node.bases)
    methods = [item for item in node.body if isinstance(item, ast.FunctionDef)]
    lines = [f"class {node.name}({bases}):" if bases else f"class {node.name}:"]
    lines += [_function(item, bodies[f"{node.name}.{item.name}"], "    ") for item in methods]
    return "\n".join(lines)


def source(degenerate, stubs):
    """The degenerate's attention.py: the stubs' imports and exception classes, then its own bodies."""
    expected, given = public_api(stubs), set(degenerate.bodies)
    if set(expected) != given:
        raise StubMismatch(
            f"degenerate {degenerate.name!r}: no body for {sorted(set(expected) - given)}, "
            f"bodies of unknown names {sorted(given - set(expected))}; update tests/mutants/degenerate.py"
        )
    tree = ast.parse(stubs)
    imports = [ast.unparse(node) for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    parts = [f'"""Degenerate submission `{degenerate.name}`: {degenerate.description}"""', "\n".join(imports)]
    parts.append(textwrap.dedent(degenerate.helpers))
    for node in tree.body:
        is_api_class = isinstance(node, ast.ClassDef) and any(isinstance(i, ast.FunctionDef) for i in node.body)
        if is_api_class:
            parts.append(_class(node, degenerate.bodies))
        elif isinstance(node, ast.ClassDef):
            parts.append(ast.get_source_segment(stubs, node) + "\n")
        elif isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            parts.append(_function(node, degenerate.bodies[node.name]))
    return "\n\n\n".join(part.strip("\n") for part in parts if part.strip()) + "\n"


# -- bodies shared by several degenerates ------------------------------------------------------

RAISE_IF_NOT_DIVISIBLE = """\
if d_model % n_heads != 0:
    raise DimensionMismatchError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
"""
LINEAR_LAYERS = """\
self.n_heads = n_heads
self.w_q = nn.Linear(d_model, d_model, bias=bias)
self.w_k = nn.Linear(d_model, d_model, bias=bias)
self.w_v = nn.Linear(d_model, d_model, bias=bias)
self.w_o = nn.Linear(d_model, d_model, bias=bias)
"""
MODULE_INIT = "super().__init__()\n"
SDPA_MODULE = "return scaled_dot_product_attention(query, key, value, mask, is_causal)\n"


def filled(fill, mask_fill, check):
    """Bodies returning tensors of the right shapes, every entry `fill` (a torch factory: zeros, ones)."""
    divisibility = RAISE_IF_NOT_DIVISIBLE if check else ""
    return {
        "attention_scores": f"return q.new_{fill}(*q.shape[:-1], k.size(-2))  # (..., Tq, Tk)",
        "causal_mask": f"return torch.{mask_fill}(seq_len, seq_len, dtype=torch.bool, device=device)  # (T, T)",
        "attention_weights": f"return torch.{fill}_like(scores)  # (..., Tq, Tk)",
        "scaled_dot_product_attention": f"""
            output = q.new_{fill}(*q.shape[:-1], v.size(-1))  # (..., Tq, dv)
            weights = q.new_{fill}(*q.shape[:-1], k.size(-2))  # (..., Tq, Tk)
            return output, weights
        """,
        "ScaledDotProductAttention.forward": SDPA_MODULE,
        "split_heads": "d_model = x.size(-1)\n" + divisibility
        + f"return x.new_{fill}(*x.shape[:-2], n_heads, x.size(-2), d_model // n_heads)  # (B, H, T, d_head)",
        "merge_heads": f"return x.new_{fill}(*x.shape[:-3], x.size(-2), x.size(-3) * x.size(-1))  # (B, T, d_model)",
        "MultiHeadAttention.__init__": MODULE_INIT + divisibility + LINEAR_LAYERS,
        "MultiHeadAttention.forward": f"""
            key = query if key is None else key
            batch, q_len, d_model = query.shape
            output = query.new_{fill}(batch, q_len, d_model)  # (B, Tq, d_model)
            weights = query.new_{fill}(batch, self.n_heads, q_len, key.size(1))  # (B, H, Tq, Tk)
            return output, weights
        """,
        "tiled_attention": f"return q.new_{fill}(*q.shape[:-1], v.size(-1))  # (..., Tq, dv)",
        "KVCache.__init__": f"""
            self.keys = torch.{fill}(batch_size, n_heads, max_len, d_head, dtype=dtype, device=device)
            self.values = torch.{fill}(batch_size, n_heads, max_len, d_head, dtype=dtype, device=device)
            self.max_len = max_len
            self.length = 0
        """,
        "KVCache.append": f"""
            self.length += k.size(-2)
            shape = (*k.shape[:-2], self.length, k.size(-1))  # (B, H, length, d_head)
            return k.new_{fill}(shape), v.new_{fill}(shape)
        """,
        "decode_step": f"return torch.{fill}_like(x_t)  # (B, 1, d_model)",
    }


def uniform():
    """Every query spreads its weight evenly over every key, whatever the scores and the mask."""
    bodies = filled("ones", "ones", check=False)
    bodies.update({
        "attention_weights": "return torch.ones_like(scores) / scores.size(-1)  # (..., Tq, Tk)",
        "scaled_dot_product_attention": """
            weights = q.new_ones(*q.shape[:-1], k.size(-2)) / k.size(-2)  # (..., Tq, Tk)
            return weights @ v, weights  # (..., Tq, dv), (..., Tq, Tk)
        """,
        "tiled_attention": "return scaled_dot_product_attention(q, k, v)[0]  # (..., Tq, dv)",
    })
    return bodies


def nothing(api):
    """`return None` everywhere; modules still call nn.Module.__init__ so that they can be built."""
    bodies = {name: "return None" for name in api}
    bodies["MultiHeadAttention.__init__"] = MODULE_INIT
    return bodies


UNCHANGED_HELPERS = '''
def _as_shape(x, *shape):
    """x itself when it already has the shape, else its first entry repeated to that shape."""
    if tuple(x.shape) == shape:
        return x
    return x.reshape(-1)[:1].reshape((1,) * len(shape)).expand(*shape)
'''


def unchanged():
    """The inputs handed back (reshaped only where their shape is not the result's)."""
    return {
        "attention_scores": "return _as_shape(q, *q.shape[:-1], k.size(-2))  # (..., Tq, Tk)",
        "causal_mask": "return torch.zeros(seq_len, seq_len, dtype=torch.bool, device=device)  # (T, T)",
        "attention_weights": "return scores",
        "scaled_dot_product_attention": """
            weights = attention_weights(attention_scores(q, k, scale), mask)  # (..., Tq, Tk)
            return _as_shape(v, *q.shape[:-1], v.size(-1)), weights  # (..., Tq, dv), (..., Tq, Tk)
        """,
        "ScaledDotProductAttention.forward": SDPA_MODULE,
        "split_heads": "d_model = x.size(-1)\n" + RAISE_IF_NOT_DIVISIBLE + "return x",
        "merge_heads": "return x",
        "MultiHeadAttention.__init__": MODULE_INIT + RAISE_IF_NOT_DIVISIBLE + LINEAR_LAYERS,
        "MultiHeadAttention.forward": """
            key = query if key is None else key
            batch, q_len, _ = query.shape
            return query, _as_shape(query, batch, self.n_heads, q_len, key.size(1))  # (B, H, Tq, Tk)
        """,
        "tiled_attention": "return _as_shape(v, *q.shape[:-1], v.size(-1))  # (..., Tq, dv)",
        "KVCache.__init__": "self.max_len = max_len\nself.length = 0",
        "KVCache.append": "return k, v",
        "decode_step": "return x_t",
    }


def degenerates(stubs):
    """The degenerate submissions, built for the stubs' functions and methods."""
    divisible = frozenset({"divisibility"})
    return (
        Degenerate("zeros", "right-shaped zeros everywhere, an all-True causal mask; raises "
                   "DimensionMismatchError when n_heads does not divide d_model.",
                   filled("zeros", "ones", check=True), divisible),
        Degenerate("ones", "right-shaped ones everywhere (the causal mask allows every key).",
                   filled("ones", "ones", check=False)),
        Degenerate("uniform", "every query averages every value evenly, whatever the scores and the mask.",
                   uniform()),
        Degenerate("none", "every function and method returns None.", nothing(public_api(stubs))),
        Degenerate("unchanged", "each function hands back its input (the first entry repeated where the "
                   "shape differs), an all-False causal mask; raises DimensionMismatchError when n_heads "
                   "does not divide d_model.", unchanged(), divisible, UNCHANGED_HELPERS),
    )
