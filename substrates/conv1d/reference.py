import torch


def reference(x, weight, bias):
    return torch.nn.functional.conv1d(x, weight, bias, stride=1, padding=0)
