import torch
try:
    torch.set_default_tensor_type("this")
except Exception as e:
    print("set_default_tensor_type imported by dotted name:", type(e).__name__, str(e)[:80])
