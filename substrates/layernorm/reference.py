"""fp64 reference for `layernorm`: normalise each row (biased variance, eps inside the sqrt), then
scale by weight and shift by bias per column."""

import torch


def reference(x, weight, bias, *, eps):
    return torch.nn.functional.layer_norm(x, x.shape[-1:], weight, bias, eps)
