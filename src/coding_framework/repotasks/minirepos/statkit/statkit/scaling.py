"""Rescaling and screening: min-max normalisation, z-scores, clipping, outliers and a summary."""

import math

from statkit.central import mean, median
from statkit.ranks import quartiles
from statkit.spread import stdev, variance

__all__ = ["clip", "normalise", "outliers", "summary", "zscores"]


def normalise(xs: list[float], lo: float = 0.0, hi: float = 1.0) -> list[float]:
    """``xs`` mapped linearly so their minimum becomes ``lo`` and their maximum ``hi``, to 4 places; all
    values become ``lo`` when they are all equal."""
    if hi <= lo:
        raise ValueError(f"the target range {lo}..{hi} is empty")
    if len(xs) == 0:
        return []
    smallest, largest = min(xs), max(xs)
    if smallest == largest:
        return [lo for _ in xs]
    scale = (hi - lo) / (largest - smallest)
    return [round(lo + (x - smallest) * scale, 4) for x in xs]


def zscores(xs: list[float], places: int = 2, sample: bool = False) -> list[float]:
    """How many standard deviations (population by default) each value lies from the mean, rounded to
    ``places``."""
    centre = mean(xs)
    deviation = math.sqrt(variance(xs, sample))
    if deviation == 0:
        raise ValueError("z-scores are undefined when all values are equal")
    return [round((x - centre) / deviation, places) for x in xs]


def clip(xs: list[float], lo: float, hi: float) -> list[float]:
    """``xs`` with values below ``lo`` raised to it and values above ``hi`` lowered to it."""
    if lo > hi:
        raise ValueError(f"the range {lo}..{hi} is empty")
    clipped = []
    for x in xs:
        if x < lo:
            clipped.append(lo)
        elif x > hi:
            clipped.append(hi)
        else:
            clipped.append(x)
    return clipped


def outliers(xs: list[float], k: float = 1.5) -> list[float]:
    """The values of ``xs`` more than ``k`` interquartile ranges below the first quartile or above the
    third, in their original order."""
    first, _, third = quartiles(xs)
    reach = k * (third - first)
    return [x for x in xs if x < first - reach or x > third + reach]


def summary(xs: list[float]) -> dict[str, float]:
    """Count, mean, median, sample standard deviation (0 for a single value), minimum and maximum."""
    return {
        "count": len(xs),
        "mean": round(mean(xs), 4),
        "median": median(xs),
        "stdev": stdev(xs) if len(xs) > 1 else 0.0,
        "min": min(xs),
        "max": max(xs),
    }
