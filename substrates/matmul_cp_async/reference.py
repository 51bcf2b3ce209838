"""fp64 reference for the square matmul problem."""


def reference(a, b):
    """Return a @ b for square matrices a (n, n) and b (n, n)."""
    return a @ b
