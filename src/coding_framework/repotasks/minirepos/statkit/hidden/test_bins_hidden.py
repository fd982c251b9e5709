import pytest
from statkit.bins import bin_edges, bin_index, bin_width, histogram


def test_bin_width_even():
    assert bin_width(0, 10, 5) == 2


def test_bin_width_fractional():
    assert bin_width(0, 10, 4) == 2.5
    assert bin_width(-2, 2, 8) == 0.5


def test_bin_width_single_bin():
    assert bin_width(3, 7, 1) == 4


def test_bin_width_no_bins_raises():
    with pytest.raises(ValueError):
        bin_width(0, 10, 0)


def test_bin_width_empty_range_raises():
    with pytest.raises(ValueError):
        bin_width(5, 5, 2)
    with pytest.raises(ValueError):
        bin_width(6, 5, 2)


def test_bin_edges_count_plus_one():
    assert bin_edges(0, 10, 5) == [0, 2, 4, 6, 8, 10]


def test_bin_edges_offset_range():
    assert bin_edges(10, 12, 4) == [10, 10.5, 11, 11.5, 12]


def test_bin_edges_round_to_four_places():
    assert bin_edges(0, 1, 3) == [0, 0.3333, 0.6667, 1]


def test_bin_edges_single_bin():
    assert bin_edges(2, 3, 1) == [2, 3]


def test_bin_index_interior():
    assert bin_index(5, 0, 10, 5) == 2
    assert bin_index(3.9, 0, 10, 5) == 1


def test_bin_index_low_edge_belongs_to_its_bin():
    assert bin_index(0, 0, 10, 5) == 0
    assert bin_index(4, 0, 10, 5) == 2


def test_bin_index_high_edge_is_in_the_last_bin():
    assert bin_index(10, 0, 10, 5) == 4


def test_bin_index_offset_range():
    assert bin_index(17, 10, 20, 2) == 1


def test_bin_index_outside_raises():
    with pytest.raises(ValueError):
        bin_index(-1, 0, 10, 5)
    with pytest.raises(ValueError):
        bin_index(11, 0, 10, 5)


def test_histogram_default_five_bins():
    assert histogram([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]) == [2, 2, 2, 2, 3]


def test_histogram_given_bins():
    assert histogram([1, 2, 2, 3, 9], 2) == [4, 1]


def test_histogram_single_bin():
    assert histogram([1, 5, 3], 1) == [3]


def test_histogram_all_equal_in_first_bin():
    assert histogram([4, 4, 4], 3) == [3, 0, 0]


def test_histogram_empty_list_gives_empty_bins():
    assert histogram([]) == [0, 0, 0, 0, 0]
    assert histogram([], 2) == [0, 0]


def test_histogram_single_value():
    assert histogram([5]) == [1, 0, 0, 0, 0]


def test_histogram_no_bins_raises():
    with pytest.raises(ValueError):
        histogram([1, 1], 0)
