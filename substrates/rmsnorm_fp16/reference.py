"""fp64 reference for `rmsnorm_fp16` (inputs are cast up from half): x / sqrt(mean(x^2) + eps) per row, then scaled by weight per column."""

import torch


def reference(x, weight, *, eps):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight
