import torch


def reference(x):
    return torch.nn.functional.max_pool2d(x, kernel_size=2, stride=2)
