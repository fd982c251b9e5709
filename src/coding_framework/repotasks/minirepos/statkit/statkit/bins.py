"""Histograms: equal-width bins between a low and a high edge."""

__all__ = ["bin_edges", "bin_index", "bin_width", "histogram"]


def bin_width(lo: float, hi: float, count: int) -> float:
    """The width of each of ``count`` equal bins spanning ``lo`` to ``hi``."""
    if count < 1:
        raise ValueError(f"need at least one bin, got {count}")
    if hi <= lo:
        raise ValueError(f"the high edge {hi} must lie above the low edge {lo}")
    return (hi - lo) / count


def bin_edges(lo: float, hi: float, count: int) -> list[float]:
    """The ``count + 1`` edges of ``count`` equal bins from ``lo`` to ``hi``, to 4 places."""
    width = bin_width(lo, hi, count)
    return [round(lo + i * width, 4) for i in range(count + 1)]


def bin_index(x: float, lo: float, hi: float, count: int) -> int:
    """The 0-based bin that ``x`` falls in; each bin holds its low edge, and the last also its high one."""
    if x < lo or x > hi:
        raise ValueError(f"{x} lies outside {lo}..{hi}")
    if x == hi:
        return count - 1
    return int((x - lo) // bin_width(lo, hi, count))


def histogram(xs: list[float], count: int = 5) -> list[int]:
    """How many values of ``xs`` fall in each of ``count`` equal bins from their minimum to their maximum.
    When all values are equal they all count in the first bin; an empty list gives empty bins."""
    if count < 1:
        raise ValueError(f"need at least one bin, got {count}")
    counts = [0] * count
    if len(xs) == 0:
        return counts
    lo, hi = min(xs), max(xs)
    if lo == hi:
        counts[0] = len(xs)
        return counts
    for x in xs:
        counts[bin_index(x, lo, hi, count)] += 1
    return counts
