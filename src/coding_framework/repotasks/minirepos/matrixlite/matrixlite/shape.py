"""Shapes and constructors: a matrix is a list of rows of equal length."""

__all__ = ["column", "identity", "is_square", "same_shape", "shape", "zeros"]


def shape(m: list[list[float]]) -> tuple[int, int]:
    """(rows, columns) of ``m``; (0, 0) for an empty matrix, ValueError for ragged rows."""
    if len(m) == 0:
        return (0, 0)
    cols = len(m[0])
    for row in m:
        if len(row) != cols:
            raise ValueError(f"ragged matrix: rows of {cols} and {len(row)} columns")
    return (len(m), cols)


def is_square(m: list[list[float]]) -> bool:
    """Whether ``m`` is a non-empty matrix with as many rows as columns."""
    rows, cols = shape(m)
    return rows > 0 and rows == cols


def same_shape(a: list[list[float]], b: list[list[float]]) -> bool:
    """Whether ``a`` and ``b`` have the same number of rows and of columns."""
    rows_a, cols_a = shape(a)
    rows_b, cols_b = shape(b)
    return rows_a == rows_b and cols_a == cols_b


def zeros(rows: int, cols: int | None = None) -> list[list[float]]:
    """A ``rows`` x ``cols`` matrix of zeros; square when ``cols`` is left out."""
    if cols is None:
        cols = rows
    if rows < 1 or cols < 1:
        raise ValueError(f"a matrix needs at least one row and column, got {rows}x{cols}")
    return [[0] * cols for _ in range(rows)]


def identity(n: int, value: float = 1) -> list[list[float]]:
    """The ``n`` x ``n`` matrix with ``value`` on the diagonal and zeros elsewhere."""
    m = zeros(n)
    for i in range(n):
        m[i][i] = value
    return m


def column(m: list[list[float]], j: int) -> list[float]:
    """Column ``j`` (0-based) of ``m``; ValueError when there is no such column."""
    _, cols = shape(m)
    if j < 0 or j >= cols:
        raise ValueError(f"column {j} of a matrix with {cols} columns")
    return [row[j] for row in m]
