"""Row reduction, rank and small linear systems."""

from fractions import Fraction

from matrixlite.det import det2
from matrixlite.shape import is_square, shape

__all__ = ["is_invertible", "rank", "row_echelon", "solve2"]


def row_echelon(m: list[list[float]]) -> list[list[float]]:
    """``m`` in row echelon form, each pivot scaled to 1, by exact Gaussian elimination; entries are
    rounded to 4 places."""
    rows, cols = shape(m)
    work = [[Fraction(x) for x in row] for row in m]
    pivot_row = 0
    for col in range(cols):
        found = [r for r in range(pivot_row, rows) if work[r][col] != 0]
        if len(found) == 0:
            continue
        work[pivot_row], work[found[0]] = work[found[0]], work[pivot_row]
        lead = work[pivot_row][col]
        work[pivot_row] = [x / lead for x in work[pivot_row]]
        for r in range(pivot_row + 1, rows):
            factor = work[r][col]
            work[r] = [work[r][c] - factor * work[pivot_row][c] for c in range(cols)]
        pivot_row += 1
    return [[round(float(x), 4) for x in row] for row in work]


def rank(m: list[list[float]]) -> int:
    """The number of linearly independent rows of ``m``."""
    count = 0
    for row in row_echelon(m):
        if any(x != 0 for x in row):
            count += 1
    return count


def is_invertible(m: list[list[float]]) -> bool:
    """Whether ``m`` is square with full rank."""
    if not is_square(m):
        return False
    return rank(m) == len(m)


def solve2(m: list[list[float]], rhs: list[float], places: int = 4) -> list[float]:
    """The solution [x, y] of the 2x2 system ``m @ [x, y] = rhs`` by Cramer's rule, rounded to
    ``places``; ValueError when ``m`` is singular."""
    if len(rhs) != 2:
        raise ValueError(f"the right-hand side needs 2 values, got {len(rhs)}")
    d = det2(m)
    if d == 0:
        raise ValueError("the system has no unique solution")
    x = det2([[rhs[0], m[0][1]], [rhs[1], m[1][1]]]) / d
    y = det2([[m[0][0], rhs[0]], [m[1][0], rhs[1]]]) / d
    return [round(x, places), round(y, places)]
