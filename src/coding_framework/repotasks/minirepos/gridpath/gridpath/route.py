"""Routes: walking moves, checking paths and solving mazes."""

from gridpath.coords import manhattan, step
from gridpath.grid import find, grid_size, is_open, parse_grid
from gridpath.search import distances, shortest_path_length


def walk(start: tuple[int, int], moves: str) -> tuple[int, int]:
    """Where `moves`, a string of "U", "D", "L" and "R", lead from `start`, ignoring walls."""
    pos = start
    for move in moves:
        pos = step(pos, move)
    return pos


def follow(grid: list[str], start: tuple[int, int], moves: str) -> tuple[int, int]:
    """Where `moves` lead from `start` when a move into a wall or off the grid is skipped."""
    pos = start
    for move in moves:
        nxt = step(pos, move)
        if is_open(grid, nxt):
            pos = nxt
    return pos


def is_valid_path(grid: list[str], path: list[tuple[int, int]]) -> bool:
    """Whether `path` is non-empty, all open cells, each one step from the previous."""
    if not path:
        return False
    for index, pos in enumerate(path):
        if not is_open(grid, pos):
            return False
        if index > 0 and manhattan(path[index - 1], pos) != 1:
            return False
    return True


def solve(text: str, start_mark: str = "S", goal_mark: str = "E") -> int:
    """The shortest path length from `start_mark` to `goal_mark` in the maze `text`; -1 when none."""
    grid = parse_grid(text)
    start = find(grid, start_mark)
    goal = find(grid, goal_mark)
    if start is None or goal is None:
        raise ValueError("the maze lacks a start or a goal")
    return shortest_path_length(grid, start, goal)


def room_sizes(grid: list[str]) -> list[int]:
    """The sizes of the rooms (orthogonally connected groups of open cells), largest first."""
    rows, cols = grid_size(grid)
    seen: set[tuple[int, int]] = set()
    sizes = []
    for r in range(rows):
        for c in range(cols):
            if (r, c) in seen or not is_open(grid, (r, c)):
                continue
            room = distances(grid, (r, c))
            seen.update(room)
            sizes.append(len(room))
    return sorted(sizes, reverse=True)


def largest_room(grid: list[str]) -> int:
    """The number of cells in the largest room; 0 when there is none."""
    sizes = room_sizes(grid)
    if not sizes:
        return 0
    return sizes[0]
