import torch


def reference(x, weight, bias, *, eps):
    return torch.nn.functional.instance_norm(x, weight=weight, bias=bias, eps=eps)
