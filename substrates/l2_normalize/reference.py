import torch


def reference(x, *, eps):
    return torch.nn.functional.normalize(x, p=2, dim=-1, eps=eps)
