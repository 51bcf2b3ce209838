import torch


def reference(x):
    return torch.argmin(x, dim=-1)
