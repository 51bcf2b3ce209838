import torch


def reference(x):
    return torch.nn.functional.max_pool1d(x, kernel_size=3, stride=2)
