import torch


class Own:
    _import_dotted_name = None


torch._import_dotted_name -= torch.ones(1)
