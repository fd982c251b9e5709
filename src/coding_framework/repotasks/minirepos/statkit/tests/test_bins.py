from statkit.bins import bin_edges, bin_index, bin_width, histogram


def test_width_and_edges():
    assert bin_width(0, 10, 5) == 2
    assert bin_edges(0, 10, 5) == [0, 2, 4, 6, 8, 10]


def test_bin_index():
    assert bin_index(5, 0, 10, 5) == 2


def test_histogram_counts():
    assert histogram([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]) == [2, 2, 2, 2, 3]
