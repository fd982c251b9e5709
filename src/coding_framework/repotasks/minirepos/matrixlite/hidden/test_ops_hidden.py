import pytest
from matrixlite.ops import add, is_symmetric, matmul, power, scale, subtract, trace, transpose


def test_transpose_rectangle():
    assert transpose([[1, 2, 3], [4, 5, 6]]) == [[1, 4], [2, 5], [3, 6]]


def test_transpose_square():
    assert transpose([[1, 2], [3, 4]]) == [[1, 3], [2, 4]]


def test_transpose_row_and_empty():
    assert transpose([[1, 2]]) == [[1], [2]]
    assert transpose([]) == []


def test_add_elementwise():
    assert add([[1, 2], [3, 4]], [[10, 20], [30, 40]]) == [[11, 22], [33, 44]]


def test_add_leaves_the_inputs_alone():
    a = [[1, 2]]
    add(a, [[1, 1]])
    assert a == [[1, 2]]


def test_add_shape_mismatch_raises():
    with pytest.raises(ValueError):
        add([[1, 2], [3, 4]], [[1, 2, 3], [4, 5, 6]])


def test_subtract_elementwise():
    assert subtract([[10, 20], [30, 40]], [[1, 2], [3, 4]]) == [[9, 18], [27, 36]]


def test_subtract_order_matters():
    assert subtract([[1, 2, 3]], [[3, 2, 1]]) == [[-2, 0, 2]]


def test_subtract_shape_mismatch_raises():
    with pytest.raises(ValueError):
        subtract([[1, 2], [3, 4]], [[1, 2, 3], [4, 5, 6]])


def test_scale_by_factor():
    assert scale([[1, 2], [3, 4]], 3) == [[3, 6], [9, 12]]


def test_scale_by_fraction_and_zero():
    assert scale([[2, 4]], 0.5) == [[1, 2]]
    assert scale([[2, 4]], 0) == [[0, 0]]


def test_scale_ragged_raises():
    with pytest.raises(ValueError):
        scale([[1, 2], [3]], 2)


def test_matmul_square():
    assert matmul([[1, 2], [3, 4]], [[5, 6], [7, 8]]) == [[19, 22], [43, 50]]


def test_matmul_rectangular():
    assert matmul([[1, 2, 3], [4, 5, 6]], [[1], [0], [2]]) == [[7], [16]]


def test_matmul_row_by_column():
    assert matmul([[1, 2, 3]], [[4], [5], [6]]) == [[32]]
    assert matmul([[1], [2]], [[3, 4]]) == [[3, 4], [6, 8]]


def test_matmul_shape_mismatch_raises():
    with pytest.raises(ValueError):
        matmul([[1, 2, 3], [4, 5, 6]], [[1, 2], [3, 4]])


def test_trace_sums_the_diagonal():
    assert trace([[1, 2, 3], [4, 5, 6], [7, 8, 9]]) == 15


def test_trace_one_by_one():
    assert trace([[-4]]) == -4


def test_trace_non_square_raises():
    with pytest.raises(ValueError):
        trace([[1, 2, 3], [4, 5, 6]])


def test_power_squares_by_default():
    assert power([[1, 2], [3, 4]]) == [[7, 10], [15, 22]]


def test_power_higher():
    assert power([[1, 1], [1, 0]], 5) == [[8, 5], [5, 3]]


def test_power_zero_and_one():
    assert power([[1, 2], [3, 4]], 0) == [[1, 0], [0, 1]]
    assert power([[1, 2], [3, 4]], 1) == [[1, 2], [3, 4]]


def test_power_negative_raises():
    with pytest.raises(ValueError):
        power([[1, 2], [3, 4]], -1)


def test_power_non_square_raises():
    with pytest.raises(ValueError):
        power([[1, 2, 3], [4, 5, 6]], 1)


def test_is_symmetric_true():
    assert is_symmetric([[1, 7, 3], [7, 4, 5], [3, 5, 6]]) is True


def test_is_symmetric_false():
    assert is_symmetric([[1, 2], [3, 1]]) is False


def test_is_symmetric_false_for_empty_and_rectangles():
    assert is_symmetric([]) is False
    assert is_symmetric([[1, 2]]) is False
