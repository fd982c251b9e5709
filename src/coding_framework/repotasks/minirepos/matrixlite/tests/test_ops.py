from matrixlite.ops import add, is_symmetric, matmul, power, scale, subtract, trace, transpose


def test_transpose_and_symmetry():
    assert transpose([[1, 2, 3], [4, 5, 6]]) == [[1, 4], [2, 5], [3, 6]]
    assert is_symmetric([[1, 2], [2, 1]])


def test_add_subtract_scale():
    assert add([[1, 2]], [[10, 20]]) == [[11, 22]]
    assert subtract([[10, 20]], [[1, 2]]) == [[9, 18]]
    assert scale([[1, 2]], 3) == [[3, 6]]


def test_matmul_trace_power():
    assert matmul([[1, 2], [3, 4]], [[5], [6]]) == [[17], [39]]
    assert trace([[1, 2], [3, 4]]) == 5
    assert power([[1, 1], [1, 0]], 3) == [[3, 2], [2, 1]]
