"""fp64 reference for `sigmoid`: out[i] = 1 / (1 + exp(-x[i]))."""

import torch


def reference(x):
    return torch.sigmoid(x)
