"""fp64 reference for the matrix-vector product."""


def reference(a, x):
    """Return a @ x for a (m, k) and x (k)."""
    return a @ x
