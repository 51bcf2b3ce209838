import torch


def reference(x):
    return torch.nn.functional.avg_pool2d(x, kernel_size=3, stride=1, padding=1, count_include_pad=True)
