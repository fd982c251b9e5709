"""Positions as (row, col) tuples: arithmetic, distances, bounds and neighbours."""

MOVES = {"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}
ORTHOGONAL = ((-1, 0), (0, -1), (0, 1), (1, 0))
DIAGONAL = ((-1, -1), (-1, 1), (1, -1), (1, 1))


def add(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    """The position `a` moved by the offset `b`."""
    row, col = a
    return (row + b[0], col + b[1])


def manhattan(a: tuple[int, int], b: tuple[int, int]) -> int:
    """The number of orthogonal steps between `a` and `b` on an open grid."""
    (r1, c1), (r2, c2) = a, b
    return abs(r1 - r2) + abs(c1 - c2)


def chebyshev(a: tuple[int, int], b: tuple[int, int]) -> int:
    """The number of steps between `a` and `b` when diagonal steps are allowed."""
    (r1, c1), (r2, c2) = a, b
    return max(abs(r1 - r2), abs(c1 - c2))


def in_bounds(pos: tuple[int, int], rows: int, cols: int) -> bool:
    """Whether `pos` lies on a grid of `rows` by `cols`."""
    row, col = pos
    return 0 <= row < rows and 0 <= col < cols


def neighbours(pos: tuple[int, int], rows: int, cols: int, diagonal: bool = False) -> list[tuple[int, int]]:
    """The positions next to `pos` on the grid, in reading order; diagonal ones too when `diagonal`."""
    offsets = ORTHOGONAL + DIAGONAL if diagonal else ORTHOGONAL
    found = []
    for offset in offsets:
        nxt = add(pos, offset)
        if in_bounds(nxt, rows, cols):
            found.append(nxt)
    return sorted(found)


def step(pos: tuple[int, int], move: str) -> tuple[int, int]:
    """`pos` after one move, "U", "D", "L" or "R"."""
    if move not in MOVES:
        raise ValueError(f"unknown move: {move!r}")
    return add(pos, MOVES[move])
