import torch


def reference(x):
    return torch.log_softmax(x, dim=-1)
