"""Breadth-first search over the open cells of a grid."""

from gridpath.coords import neighbours
from gridpath.grid import grid_size, is_open


def open_neighbours(grid: list[str], pos: tuple[int, int], diagonal: bool = False) -> list[tuple[int, int]]:
    """The open cells next to `pos`, in reading order."""
    rows, cols = grid_size(grid)
    return [nxt for nxt in neighbours(pos, rows, cols, diagonal) if is_open(grid, nxt)]


def distances(grid: list[str], start: tuple[int, int], diagonal: bool = False) -> dict[tuple[int, int], int]:
    """The number of steps from `start` to each open cell reachable from it; {} when `start` is a wall."""
    if not is_open(grid, start):
        return {}
    dist = {start: 0}
    queue = [start]
    index = 0
    while index < len(queue):
        pos = queue[index]
        index += 1
        for nxt in open_neighbours(grid, pos, diagonal):
            if nxt not in dist:
                dist[nxt] = dist[pos] + 1
                queue.append(nxt)
    return dist


def shortest_path_length(
    grid: list[str], start: tuple[int, int], goal: tuple[int, int], diagonal: bool = False
) -> int:
    """The fewest steps from `start` to `goal` through open cells; -1 when there is no way."""
    return distances(grid, start, diagonal).get(goal, -1)


def flood_fill_area(grid: list[str], start: tuple[int, int]) -> int:
    """The number of open cells connected to `start` orthogonally, `start` included."""
    reached = distances(grid, start)
    return len(reached)
