from statkit.central import mean, median, mode, total, weighted_mean


def test_total_and_mean():
    assert total([1, 2, 3, 4]) == 10
    assert mean([1, 2, 3, 4]) == 2.5


def test_weighted_mean():
    assert weighted_mean([10, 20], [3, 1]) == 12.5


def test_median_and_mode():
    assert median([5, 1, 3]) == 3
    assert mode([1, 2, 2, 3]) == 2
