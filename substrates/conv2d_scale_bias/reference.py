import torch


def reference(x, weight, bias, scale, shift):
    y = torch.nn.functional.conv2d(x, weight, bias, stride=1, padding=1)
    return y * scale.view(1, -1, 1, 1) + shift.view(1, -1, 1, 1)
