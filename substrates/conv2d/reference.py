import torch


def reference(x, weight, bias):
    return torch.nn.functional.conv2d(x, weight, bias, stride=1, padding=1)
