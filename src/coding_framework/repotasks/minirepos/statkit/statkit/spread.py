"""Spread: squared deviations, variance, standard deviation and relative spread."""

import math

from statkit.central import mean, total

__all__ = ["coefficient_of_variation", "mean_abs_dev", "squared_deviations", "stdev", "variance"]


def squared_deviations(xs: list[float]) -> float:
    """The sum of the squared distances of ``xs`` from their mean."""
    centre = mean(xs)
    return total([(x - centre) ** 2 for x in xs])


def variance(xs: list[float], sample: bool = True) -> float:
    """The variance of ``xs``: divided by n - 1 for a sample (the default), by n for a population."""
    n = len(xs)
    if sample:
        if n < 2:
            raise ValueError("a sample variance needs at least two values")
        return squared_deviations(xs) / (n - 1)
    return squared_deviations(xs) / n


def stdev(xs: list[float], sample: bool = True, places: int = 4) -> float:
    """The standard deviation of ``xs`` (sample by default), rounded to ``places``."""
    spread = variance(xs, sample)
    return round(math.sqrt(spread), places)


def mean_abs_dev(xs: list[float]) -> float:
    """The mean absolute distance of ``xs`` from their mean, to 4 places."""
    centre = mean(xs)
    distances = [abs(x - centre) for x in xs]
    return round(total(distances) / len(xs), 4)


def coefficient_of_variation(xs: list[float], sample: bool = True) -> float:
    """The standard deviation as a percentage of the mean, to 2 places."""
    centre = mean(xs)
    if centre == 0:
        raise ValueError("the coefficient of variation is undefined for a zero mean")
    return round(100 * math.sqrt(variance(xs, sample)) / abs(centre), 2)
