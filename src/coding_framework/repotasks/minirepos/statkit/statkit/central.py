"""Averages: sums, means, the median and the mode."""

__all__ = ["mean", "median", "mode", "total", "weighted_mean"]


def total(xs: list[float]) -> float:
    """The sum of ``xs``; 0 for an empty list."""
    result = 0.0
    for x in xs:
        result += x
    return result


def mean(xs: list[float]) -> float:
    """The arithmetic mean of ``xs``."""
    if len(xs) == 0:
        raise ValueError("mean of an empty list")
    return total(xs) / len(xs)


def weighted_mean(xs: list[float], weights: list[float]) -> float:
    """The mean of ``xs`` with each value counted ``weights[i]`` times, to 4 places."""
    if len(xs) != len(weights):
        raise ValueError(f"{len(xs)} values but {len(weights)} weights")
    weight = total(weights)
    if weight <= 0:
        raise ValueError("weights must add up to more than zero")
    weighted = 0.0
    for i in range(len(xs)):
        weighted += xs[i] * weights[i]
    return round(weighted / weight, 4)


def median(xs: list[float]) -> float:
    """The middle value of ``xs``; the mean of the two middle values for an even count."""
    if len(xs) == 0:
        raise ValueError("median of an empty list")
    ordered = sorted(xs)
    middle = len(ordered) // 2
    if len(ordered) % 2 == 1:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def mode(xs: list[float]) -> float:
    """The most frequent value of ``xs``; the smallest of them on a tie."""
    if len(xs) == 0:
        raise ValueError("mode of an empty list")
    counts: dict[float, int] = {}
    for x in xs:
        counts[x] = counts.get(x, 0) + 1
    ordered = sorted(counts)
    best = ordered[0]
    for value in ordered:
        if counts[value] > counts[best]:
            best = value
    return best
