"""Determinants and inverses of 2x2 and 3x3 matrices."""

from matrixlite.shape import shape

__all__ = ["det2", "det3", "determinant", "inverse2", "minor"]


def minor(m: list[list[float]], row: int, col: int) -> list[list[float]]:
    """``m`` without row ``row`` and column ``col``; ValueError when there is no such row or column."""
    rows, cols = shape(m)
    if row < 0 or row >= rows or col < 0 or col >= cols:
        raise ValueError(f"no entry ({row}, {col}) in a {rows}x{cols} matrix")
    return [[m[i][j] for j in range(cols) if j != col] for i in range(rows) if i != row]


def det2(m: list[list[float]]) -> float:
    """The determinant of a 2x2 matrix."""
    if shape(m) != (2, 2):
        raise ValueError(f"det2 needs a 2x2 matrix, got {shape(m)}")
    return m[0][0] * m[1][1] - m[0][1] * m[1][0]


def det3(m: list[list[float]]) -> float:
    """The determinant of a 3x3 matrix, by cofactor expansion along the first row."""
    if shape(m) != (3, 3):
        raise ValueError(f"det3 needs a 3x3 matrix, got {shape(m)}")
    total: float = 0
    for j in range(3):
        sign = 1 if j % 2 == 0 else -1
        total += sign * m[0][j] * det2(minor(m, 0, j))
    return total


def determinant(m: list[list[float]]) -> float:
    """The determinant of a square matrix of up to 3 rows."""
    rows, cols = shape(m)
    if rows != cols or rows == 0:
        raise ValueError(f"the determinant needs a non-empty square matrix, got {rows}x{cols}")
    if rows == 1:
        return m[0][0]
    if rows == 2:
        return det2(m)
    if rows == 3:
        return det3(m)
    raise ValueError(f"determinants are supported up to 3x3, got {rows}x{cols}")


def inverse2(m: list[list[float]], places: int = 4) -> list[list[float]]:
    """The inverse of a 2x2 matrix, entries rounded to ``places``; ValueError when it is singular."""
    d = det2(m)
    if d == 0:
        raise ValueError("the matrix is singular")
    return [
        [round(m[1][1] / d, places), round(-m[0][1] / d, places)],
        [round(-m[1][0] / d, places), round(m[0][0] / d, places)],
    ]
