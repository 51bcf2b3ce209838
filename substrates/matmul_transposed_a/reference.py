"""fp64 reference for the transposed-A matmul."""


def reference(a, b):
    """Return a.T @ b for a stored (k, m) and b (k, n)."""
    return a.T @ b
