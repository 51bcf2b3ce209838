import torch


def reference(x):
    inclusive = torch.cumsum(x, dim=-1)
    return torch.cat([torch.zeros_like(x[..., :1]), inclusive[..., :-1]], dim=-1)
