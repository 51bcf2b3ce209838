"""fp64 reference for diag(d) @ b."""
import torch


def reference(d, b):
    """Return torch.diag(d) @ b, computed as a row scaling of b (n, m) by d (n)."""
    return d.unsqueeze(1) * b
