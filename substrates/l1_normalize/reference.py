import torch


def reference(x, *, eps):
    return torch.nn.functional.normalize(x, p=1, dim=-1, eps=eps)
