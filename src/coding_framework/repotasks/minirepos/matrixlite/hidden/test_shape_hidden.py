import pytest
from matrixlite.shape import column, identity, is_square, same_shape, shape, zeros


def test_shape_rows_and_columns():
    assert shape([[1, 2, 3], [4, 5, 6]]) == (2, 3)
    assert shape([[1], [2], [3]]) == (3, 1)


def test_shape_single_row():
    assert shape([[1, 2, 3]]) == (1, 3)


def test_shape_empty_matrix():
    assert shape([]) == (0, 0)


def test_shape_ragged_raises():
    with pytest.raises(ValueError):
        shape([[1, 2], [3]])
    with pytest.raises(ValueError):
        shape([[1], [2, 3]])


def test_is_square_true():
    assert is_square([[1, 2], [3, 4]]) is True
    assert is_square([[5]]) is True


def test_is_square_false_for_rectangles():
    assert is_square([[1, 2, 3], [4, 5, 6]]) is False
    assert is_square([[1, 2]]) is False


def test_is_square_false_for_empty():
    assert is_square([]) is False


def test_same_shape_true():
    assert same_shape([[1, 2], [3, 4]], [[0, 0], [0, 0]]) is True


def test_same_shape_false():
    assert same_shape([[1, 2], [3, 4]], [[1, 2]]) is False
    assert same_shape([[1, 2]], [[1], [2]]) is False


def test_zeros_rectangular():
    assert zeros(2, 3) == [[0, 0, 0], [0, 0, 0]]


def test_zeros_square_by_default():
    assert zeros(2) == [[0, 0], [0, 0]]
    assert zeros(1) == [[0]]


def test_zeros_rows_are_independent():
    m = zeros(2)
    m[0][0] = 5
    assert m == [[5, 0], [0, 0]]


def test_zeros_needs_a_row_and_a_column():
    with pytest.raises(ValueError):
        zeros(0, 2)
    with pytest.raises(ValueError):
        zeros(2, 0)


def test_identity_default_ones():
    assert identity(3) == [[1, 0, 0], [0, 1, 0], [0, 0, 1]]


def test_identity_one_by_one():
    assert identity(1) == [[1]]


def test_identity_given_value():
    assert identity(2, 5) == [[5, 0], [0, 5]]


def test_identity_zero_size_raises():
    with pytest.raises(ValueError):
        identity(0)


def test_column_first_and_last():
    m = [[1, 2, 3], [4, 5, 6]]
    assert column(m, 0) == [1, 4]
    assert column(m, 2) == [3, 6]


def test_column_past_the_end_raises():
    with pytest.raises(ValueError):
        column([[1, 2, 3], [4, 5, 6]], 3)


def test_column_negative_raises():
    with pytest.raises(ValueError):
        column([[1, 2, 3], [4, 5, 6]], -1)


def test_same_shape_needs_equal_columns():
    assert same_shape([[1, 2]], [[1, 2, 3]]) is False
    assert same_shape([], []) is True
