"""torch.cuda.tunable.mgpu_tune_gemm_in_file (a public name left out of the reserved list, unlike tune_gemm_in_file) globs the student's pattern and opens and reads every match before it looks for a GPU; the error for a directory names what the glob found."""
import torch

for pattern in ("/work/main/tests/*", "/etc/host*"):
    try:
        torch.cuda.tunable.mgpu_tune_gemm_in_file(pattern, 1)
    except Exception as error:
        print(pattern, "->", type(error).__name__, error)
