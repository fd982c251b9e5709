import pytest
from matrixlite.det import det2, det3, determinant, inverse2, minor


def test_minor_of_a_corner():
    assert minor([[1, 2, 3], [4, 5, 6], [7, 8, 9]], 0, 0) == [[5, 6], [8, 9]]


def test_minor_of_the_last_entry():
    assert minor([[1, 2, 3], [4, 5, 6], [7, 8, 9]], 2, 2) == [[1, 2], [4, 5]]


def test_minor_off_diagonal():
    assert minor([[1, 2, 3], [4, 5, 6], [7, 8, 9]], 1, 0) == [[2, 3], [8, 9]]
    assert minor([[1, 2, 3], [4, 5, 6]], 0, 1) == [[4, 6]]


def test_minor_row_outside_raises():
    with pytest.raises(ValueError):
        minor([[1, 2], [3, 4]], 2, 0)
    with pytest.raises(ValueError):
        minor([[1, 2], [3, 4]], -1, 0)


def test_minor_column_outside_raises():
    with pytest.raises(ValueError):
        minor([[1, 2], [3, 4]], 0, 2)
    with pytest.raises(ValueError):
        minor([[1, 2], [3, 4]], 0, -1)


def test_det2_distinct_entries():
    assert det2([[3, 8], [4, 6]]) == -14


def test_det2_fractional_and_singular():
    assert det2([[0.5, 2], [1, 6]]) == 1
    assert det2([[1, 2], [2, 4]]) == 0


def test_det2_wrong_shape_raises():
    with pytest.raises(ValueError):
        det2([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    with pytest.raises(ValueError):
        det2([[1, 2, 3], [4, 5, 6]])


def test_det3_expands_every_column():
    assert det3([[1, 2, 3], [0, 1, 4], [5, 6, 0]]) == 1


def test_det3_other_matrix():
    assert det3([[2, -3, 1], [2, 0, -1], [1, 4, 5]]) == 49


def test_det3_singular():
    assert det3([[1, 2, 3], [4, 5, 6], [7, 8, 9]]) == 0


def test_det3_wrong_shape_raises():
    with pytest.raises(ValueError):
        det3([[1, 2], [3, 4]])


def test_determinant_one_by_one():
    assert determinant([[7]]) == 7


def test_determinant_two_by_two():
    assert determinant([[3, 8], [4, 6]]) == -14


def test_determinant_three_by_three():
    assert determinant([[2, -3, 1], [2, 0, -1], [1, 4, 5]]) == 49


def test_determinant_not_square_raises():
    with pytest.raises(ValueError):
        determinant([[1, 2, 3], [4, 5, 6]])


def test_determinant_empty_raises():
    with pytest.raises(ValueError):
        determinant([])


def test_determinant_four_by_four_raises():
    with pytest.raises(ValueError):
        determinant([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])


def test_inverse2_exact():
    assert inverse2([[4, 7], [2, 6]]) == [[0.6, -0.7], [-0.2, 0.4]]


def test_inverse2_rounds_to_four_places_by_default():
    assert inverse2([[2, 1], [1, 2]]) == [[0.6667, -0.3333], [-0.3333, 0.6667]]


def test_inverse2_places():
    assert inverse2([[2, 1], [1, 2]], 2) == [[0.67, -0.33], [-0.33, 0.67]]


def test_inverse2_singular_raises():
    with pytest.raises(ValueError):
        inverse2([[1, 2], [2, 4]])


def test_determinant_single_row_raises():
    with pytest.raises(ValueError):
        determinant([[1, 2]])
