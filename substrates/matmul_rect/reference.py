"""fp64 reference for the rectangular matmul problem."""


def reference(a, b):
    """Return a @ b for a (m, k) and b (k, n)."""
    return a @ b
