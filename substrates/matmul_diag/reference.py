"""fp64 reference for diag(d) @ b."""
import torch


def reference(d, b):
    """Return diag(d) @ b as the row scaling d[i] * b[i, j] it equals: torch.diag(d) @ b would
    build the n x n diagonal matrix, 32 GiB of float64 at n = 65536, the top of the range."""
    return d[:, None] * b
