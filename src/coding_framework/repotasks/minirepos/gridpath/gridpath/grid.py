"""Grids as lists of equally long strings; "#" marks a wall."""

from gridpath.coords import in_bounds


def parse_grid(text: str) -> list[str]:
    """The rows of `text`, stripped, without blank lines; every row must be as long as the first."""
    rows = [line.strip() for line in text.splitlines() if line.strip()]
    if not rows:
        raise ValueError("the grid has no rows")
    for row in rows:
        if len(row) != len(rows[0]):
            raise ValueError("the rows differ in length")
    return rows


def grid_size(grid: list[str]) -> tuple[int, int]:
    """(rows, cols) of `grid`; (0, 0) for no rows."""
    if not grid:
        return (0, 0)
    return (len(grid), len(grid[0]))


def cell(grid: list[str], pos: tuple[int, int]) -> str:
    """The character at `pos`."""
    rows, cols = grid_size(grid)
    if not in_bounds(pos, rows, cols):
        raise IndexError(f"{pos} is outside the grid")
    return grid[pos[0]][pos[1]]


def is_open(grid: list[str], pos: tuple[int, int], wall: str = "#") -> bool:
    """Whether `pos` is on the grid and not a `wall`."""
    rows, cols = grid_size(grid)
    return in_bounds(pos, rows, cols) and cell(grid, pos) != wall


def find(grid: list[str], mark: str) -> tuple[int, int] | None:
    """The first position holding `mark` in reading order, or None."""
    for r, row in enumerate(grid):
        c = row.find(mark)
        if c != -1:
            return (r, c)
    return None


def count_cells(grid: list[str], mark: str = ".") -> int:
    """How many cells hold `mark`."""
    total = 0
    for row in grid:
        total += row.count(mark)
    return total
