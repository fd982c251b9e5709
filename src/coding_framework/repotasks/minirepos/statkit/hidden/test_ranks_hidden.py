import pytest
from statkit.ranks import iqr, percent_rank, percentile, quartiles, ranks


def test_percentile_median_of_odd_list():
    assert percentile([5, 1, 4, 2, 3], 50) == 3


def test_percentile_interpolates():
    assert percentile([10, 20, 30, 40], 10) == 13
    assert percentile([1, 2, 3, 4], 50) == 2.5


def test_percentile_ends():
    assert percentile([3, 1, 2], 0) == 1
    assert percentile([3, 1, 2], 100) == 3


def test_percentile_rounds_to_four_places():
    assert percentile([0, 1], 12.34567) == 0.1235


def test_percentile_single_value():
    assert percentile([7], 40) == 7


def test_percentile_out_of_range_raises():
    with pytest.raises(ValueError):
        percentile([1, 2], 101)
    with pytest.raises(ValueError):
        percentile([1, 2], -1)


def test_percentile_empty_raises():
    with pytest.raises(ValueError):
        percentile([], 50)


def test_quartiles_of_five():
    assert quartiles([5, 4, 3, 2, 1]) == (2, 3, 4)


def test_quartiles_interpolated():
    assert quartiles([1, 2, 3, 4]) == (1.75, 2.5, 3.25)


def test_quartiles_empty_raises():
    with pytest.raises(ValueError):
        quartiles([])


def test_iqr_of_four():
    assert iqr([4, 3, 2, 1]) == 1.5


def test_iqr_of_ten():
    assert iqr([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]) == 4.5


def test_iqr_equal_values():
    assert iqr([6, 6, 6]) == 0


def test_percent_rank_counts_ties_as_half():
    assert percent_rank([1, 2, 3, 4], 3) == 62.5


def test_percent_rank_value_not_in_list():
    assert percent_rank([1, 2, 3, 4], 2.5) == 50


def test_percent_rank_extremes():
    assert percent_rank([1, 2, 3, 4], 0) == 0
    assert percent_rank([1, 2, 3, 4], 9) == 100


def test_percent_rank_rounds_to_two_places():
    assert percent_rank([1, 2, 3], 1.5) == 33.33


def test_percent_rank_all_equal():
    assert percent_rank([5, 5], 5) == 50


def test_percent_rank_empty_raises():
    with pytest.raises(ValueError):
        percent_rank([], 1)


def test_ranks_smallest_first_by_default():
    assert ranks([30, 10, 20]) == [3, 1, 2]


def test_ranks_ties_share_the_best_rank():
    assert ranks([5, 1, 5, 3]) == [3, 1, 3, 2]


def test_ranks_descending():
    assert ranks([30, 10, 20], descending=True) == [1, 3, 2]


def test_ranks_empty():
    assert ranks([]) == []


def test_iqr_keeps_four_places():
    assert iqr([0, 1.0001, 2, 3, 4]) == 1.9999
