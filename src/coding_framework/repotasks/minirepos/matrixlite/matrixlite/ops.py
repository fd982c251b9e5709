"""Elementwise and matrix operations."""

from matrixlite.shape import column, identity, is_square, same_shape, shape, zeros

__all__ = ["add", "is_symmetric", "matmul", "power", "scale", "subtract", "trace", "transpose"]


def transpose(m: list[list[float]]) -> list[list[float]]:
    """``m`` with rows and columns swapped."""
    _, cols = shape(m)
    return [column(m, j) for j in range(cols)]


def add(a: list[list[float]], b: list[list[float]]) -> list[list[float]]:
    """The elementwise sum of two matrices of the same shape."""
    if not same_shape(a, b):
        raise ValueError(f"cannot add a {shape(a)} matrix and a {shape(b)} matrix")
    return [[a[i][j] + b[i][j] for j in range(len(a[i]))] for i in range(len(a))]


def subtract(a: list[list[float]], b: list[list[float]]) -> list[list[float]]:
    """The elementwise difference ``a - b`` of two matrices of the same shape."""
    if not same_shape(a, b):
        raise ValueError(f"cannot subtract a {shape(b)} matrix from a {shape(a)} matrix")
    return [[a[i][j] - b[i][j] for j in range(len(a[i]))] for i in range(len(a))]


def scale(m: list[list[float]], k: float) -> list[list[float]]:
    """``m`` with every entry multiplied by ``k``."""
    shape(m)
    return [[k * x for x in row] for row in m]


def matmul(a: list[list[float]], b: list[list[float]]) -> list[list[float]]:
    """The matrix product ``a @ b``; ``a`` needs as many columns as ``b`` has rows."""
    a_rows, a_cols = shape(a)
    b_rows, b_cols = shape(b)
    if a_cols != b_rows:
        raise ValueError(f"cannot multiply a {a_rows}x{a_cols} matrix by a {b_rows}x{b_cols} matrix")
    product = zeros(a_rows, b_cols)
    for i in range(a_rows):
        for j in range(b_cols):
            total: float = 0
            for k in range(a_cols):
                total += a[i][k] * b[k][j]
            product[i][j] = total
    return product


def trace(m: list[list[float]]) -> float:
    """The sum of the diagonal of a square matrix."""
    if not is_square(m):
        raise ValueError("the trace needs a square matrix")
    total: float = 0
    for i in range(len(m)):
        total += m[i][i]
    return total


def power(m: list[list[float]], k: int = 2) -> list[list[float]]:
    """``m`` multiplied by itself ``k`` times (the square by default); the identity for ``k`` = 0."""
    if k < 0:
        raise ValueError(f"the power must not be negative, got {k}")
    if not is_square(m):
        raise ValueError("powers need a square matrix")
    result = identity(len(m))
    for _ in range(k):
        result = matmul(result, m)
    return result


def is_symmetric(m: list[list[float]]) -> bool:
    """Whether ``m`` is square and equal to its transpose."""
    if not is_square(m):
        return False
    return m == transpose(m)
