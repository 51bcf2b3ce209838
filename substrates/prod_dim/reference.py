import torch


def reference(x):
    return torch.prod(x, dim=-1)
