import pytest
from statkit.central import mean, median, mode, total, weighted_mean


def test_total_of_values():
    assert total([1, 2, 3, 4]) == 10
    assert total([2.5, -1]) == 1.5


def test_total_of_empty_list():
    assert total([]) == 0


def test_total_single_value():
    assert total([7]) == 7


def test_mean_fractional():
    assert mean([1, 2]) == 1.5


def test_mean_single_value():
    assert mean([7]) == 7


def test_mean_with_negatives():
    assert mean([-4, 0, 10]) == 2


def test_mean_empty_raises():
    with pytest.raises(ValueError):
        mean([])


def test_weighted_mean_weights_count():
    assert weighted_mean([10, 20], [3, 1]) == 12.5


def test_weighted_mean_rounds_to_four_places():
    assert weighted_mean([1, 2], [2, 1]) == 1.3333


def test_weighted_mean_zero_weight_ignores_a_value():
    assert weighted_mean([4, 9], [1, 0]) == 4


def test_weighted_mean_equal_weights_is_the_mean():
    assert weighted_mean([1, 2, 6], [2, 2, 2]) == 3


def test_weighted_mean_more_weights_than_values_raises():
    with pytest.raises(ValueError):
        weighted_mean([1, 2], [1, 1, 1])


def test_weighted_mean_fewer_weights_than_values_raises():
    with pytest.raises(ValueError):
        weighted_mean([1, 2, 3], [1, 1])


def test_weighted_mean_zero_total_weight_raises():
    with pytest.raises(ValueError):
        weighted_mean([1, 2], [0, 0])


def test_median_odd_count_unsorted():
    assert median([9, 1, 5, 3, 7]) == 5


def test_median_even_count_averages_the_middle_pair():
    assert median([4, 1, 2, 3]) == 2.5


def test_median_even_count_six_values():
    assert median([10, 60, 20, 50, 30, 40]) == 35


def test_median_single_and_pair():
    assert median([7]) == 7
    assert median([2, 5]) == 3.5


def test_median_empty_raises():
    with pytest.raises(ValueError):
        median([])


def test_mode_most_frequent():
    assert mode([5, 1, 5, 2]) == 5


def test_mode_tie_takes_the_smallest():
    assert mode([3, 1, 3, 1, 2]) == 1


def test_mode_all_distinct_is_the_smallest():
    assert mode([4, 2, 9]) == 2


def test_mode_single_value():
    assert mode([8]) == 8


def test_mode_empty_raises():
    with pytest.raises(ValueError):
        mode([])


def test_mode_later_value_wins_on_count():
    assert mode([1, 9, 9, 2, 9, 1]) == 9
