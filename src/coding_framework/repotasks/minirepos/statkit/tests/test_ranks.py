from statkit.ranks import iqr, percent_rank, percentile, quartiles, ranks


def test_percentile_and_quartiles():
    xs = [1, 2, 3, 4, 5]
    assert percentile(xs, 50) == 3
    assert quartiles(xs) == (2, 3, 4)
    assert iqr(xs) == 2


def test_percent_rank():
    assert percent_rank([1, 2, 3, 4], 3) == 62.5


def test_ranks_smallest_first():
    assert ranks([30, 10, 20]) == [3, 1, 2]
