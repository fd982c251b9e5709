"""Order statistics: percentiles, quartiles and ranks."""

__all__ = ["iqr", "percent_rank", "percentile", "quartiles", "ranks"]


def percentile(xs: list[float], p: float) -> float:
    """The ``p``-th percentile of ``xs`` (0 to 100), interpolating linearly between the closest ranks,
    to 4 places."""
    if len(xs) == 0:
        raise ValueError("percentile of an empty list")
    if p < 0 or p > 100:
        raise ValueError(f"percentile must be between 0 and 100, got {p}")
    ordered = sorted(xs)
    position = (len(ordered) - 1) * p / 100
    lower = int(position)
    if lower + 1 == len(ordered):
        return ordered[lower]
    fraction = position - lower
    return round(ordered[lower] + (ordered[lower + 1] - ordered[lower]) * fraction, 4)


def quartiles(xs: list[float]) -> tuple[float, float, float]:
    """The 25th, 50th and 75th percentiles of ``xs``."""
    first = percentile(xs, 25)
    third = percentile(xs, 75)
    return first, percentile(xs, 50), third


def iqr(xs: list[float]) -> float:
    """The interquartile range of ``xs``: the 75th percentile less the 25th, to 4 places."""
    first, _, third = quartiles(xs)
    return round(third - first, 4)


def percent_rank(xs: list[float], value: float) -> float:
    """The percentage of ``xs`` below ``value``, counting values equal to it as half, to 2 places."""
    if len(xs) == 0:
        raise ValueError("percent rank in an empty list")
    below = 0
    equal = 0
    for x in xs:
        if x < value:
            below += 1
        elif x == value:
            equal += 1
    return round(100 * (below + equal / 2) / len(xs), 2)


def ranks(xs: list[float], descending: bool = False) -> list[int]:
    """The 1-based rank of each value of ``xs``, smallest first unless ``descending``; tied values share
    the best rank of their group."""
    ordered = sorted(xs, reverse=descending)
    return [ordered.index(x) + 1 for x in xs]
