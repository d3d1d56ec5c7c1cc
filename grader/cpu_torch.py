"""`python -m grader.cpu_torch`: exit 0 when the installed torch is a CPU build, else say why in one line.

`make install`, setup.sh (Gradescope) and the Classroom workflow run it right after installing torch from
PyTorch's CPU index: a CUDA build (a multi-GB download from PyPI, or an index your pip configuration adds)
grades the same but costs minutes and gigabytes on every install, so the install stops instead.
"""

import sys

FIX = ("reinstall it from the CPU index: python -m pip install --force-reinstall "
       "--index-url https://download.pytorch.org/whl/cpu 'torch==2.13.0+cpu'")


def problem() -> str | None:
    """None for a CPU build of torch; otherwise one line naming what is wrong and how to fix it."""
    try:
        import torch
    except ImportError as error:
        return f"torch is not installed ({error}): {FIX}"
    cuda = getattr(torch.version, "cuda", None)
    if cuda is not None:
        return f"torch {torch.__version__} is a CUDA {cuda} build, not the CPU one this lab needs: {FIX}"
    return None


def main() -> int:
    found = problem()
    if found is None:
        import torch

        print(f"torch {torch.__version__}: a CPU build")
        return 0
    print(f"error: {found}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
