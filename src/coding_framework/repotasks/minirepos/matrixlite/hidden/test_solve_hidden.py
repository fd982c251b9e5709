import pytest
from matrixlite.solve import is_invertible, rank, row_echelon, solve2


def test_row_echelon_scales_pivots():
    assert row_echelon([[2, 4], [1, 3]]) == [[1, 2], [0, 1]]


def test_row_echelon_swaps_a_zero_pivot():
    assert row_echelon([[0, 2], [3, 6]]) == [[1, 2], [0, 1]]


def test_row_echelon_singular_three_by_three():
    assert row_echelon([[1, 2, 3], [4, 5, 6], [7, 8, 9]]) == [[1, 2, 3], [0, 1, 2], [0, 0, 0]]


def test_row_echelon_rounds_to_four_places():
    assert row_echelon([[3, 4], [0, 2]]) == [[1, 1.3333], [0, 1]]


def test_row_echelon_skips_a_zero_column():
    assert row_echelon([[0, 2, 4], [0, 1, 3]]) == [[0, 1, 2], [0, 0, 1]]


def test_row_echelon_tall_matrix():
    assert row_echelon([[1, 2], [2, 4], [3, 7]]) == [[1, 2], [0, 1], [0, 0]]


def test_row_echelon_leaves_the_input_alone():
    m = [[2, 4], [1, 3]]
    row_echelon(m)
    assert m == [[2, 4], [1, 3]]


def test_rank_full():
    assert rank([[1, 2], [3, 4]]) == 2
    assert rank([[2, 0, 0], [0, 3, 0], [0, 0, 4]]) == 3


def test_rank_deficient():
    assert rank([[1, 2, 3], [4, 5, 6], [7, 8, 9]]) == 2
    assert rank([[1, 2], [2, 4]]) == 1


def test_rank_zero_matrix():
    assert rank([[0, 0], [0, 0]]) == 0


def test_rank_rectangular():
    assert rank([[1, 2, 3], [2, 4, 7]]) == 2
    assert rank([[1, 2], [2, 4], [3, 6]]) == 1


def test_is_invertible_true():
    assert is_invertible([[1, 2], [3, 4]]) is True
    assert is_invertible([[5]]) is True


def test_is_invertible_singular():
    assert is_invertible([[1, 2, 3], [4, 5, 6], [7, 8, 9]]) is False


def test_is_invertible_rectangular():
    assert is_invertible([[1, 2, 3], [4, 5, 6]]) is False


def test_solve2_exact():
    assert solve2([[2, 1], [1, 3]], [3, 5]) == [0.8, 1.4]


def test_solve2_distinct_entries():
    assert solve2([[1, 2], [3, 4]], [5, 6]) == [-4, 4.5]


def test_solve2_rounds_to_four_places_by_default():
    assert solve2([[2, 1], [1, 2]], [1, 0]) == [0.6667, -0.3333]


def test_solve2_places():
    assert solve2([[2, 1], [1, 2]], [1, 0], 1) == [0.7, -0.3]


def test_solve2_singular_raises():
    with pytest.raises(ValueError):
        solve2([[1, 2], [2, 4]], [1, 2])


def test_solve2_wrong_right_hand_side_raises():
    with pytest.raises(ValueError):
        solve2([[1, 2], [3, 4]], [1, 2, 3])
    with pytest.raises(ValueError):
        solve2([[1, 2], [3, 4]], [1])


def test_row_echelon_takes_the_first_usable_pivot():
    assert row_echelon([[0, 1], [2, 4], [1, 3]]) == [[1, 2], [0, 1], [0, 0]]
