import torch


def reference(x):
    return torch.sum(x, dim=-1)
