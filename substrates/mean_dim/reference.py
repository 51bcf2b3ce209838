import torch


def reference(x):
    return torch.mean(x, dim=-1)
