from matrixlite.det import det2, det3, determinant, inverse2, minor


def test_small_determinants():
    assert det2([[1, 2], [3, 4]]) == -2
    assert det3([[1, 2, 3], [0, 1, 4], [5, 6, 0]]) == 1
    assert determinant([[7]]) == 7


def test_minor_drops_a_row_and_column():
    assert minor([[1, 2, 3], [4, 5, 6], [7, 8, 9]], 0, 0) == [[5, 6], [8, 9]]


def test_inverse_of_a_2x2():
    assert inverse2([[4, 7], [2, 6]]) == [[0.6, -0.7], [-0.2, 0.4]]
