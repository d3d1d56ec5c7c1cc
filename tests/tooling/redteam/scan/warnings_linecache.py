import warnings
path = "/work/main/tests/hidden/test_sdpa.py"
for i in range(1, 6):
    print(warnings.formatwarning("m", UserWarning, path, i), end="")
