"""fp64 reference for Linear, sigmoid, sum over features."""
import torch


def reference(x, weight, bias):
    """Return sigmoid(x @ weight.T + bias).sum(dim=1, keepdim=True), shape (batch, 1)."""
    return torch.sigmoid(torch.nn.functional.linear(x, weight, bias)).sum(dim=1, keepdim=True)
