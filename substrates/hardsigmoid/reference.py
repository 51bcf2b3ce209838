"""fp64 reference for `hardsigmoid`: out[i] = min(max(x[i] + 3, 0), 6) / 6."""

import torch


def reference(x):
    return torch.nn.functional.hardsigmoid(x)
