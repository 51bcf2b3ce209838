"""fp64 reference for diag(d) @ b."""
import torch


def reference(d, b):
    """Return diag(d) @ b, the product itself (torch builds the diagonal matrix)."""
    return torch.diag(d) @ b
