import torch


def reference(x):
    return torch.cumsum(x, dim=-1)
