from matrixlite.shape import column, identity, is_square, same_shape, shape, zeros


def test_shape_of_a_matrix():
    assert shape([[1, 2, 3], [4, 5, 6]]) == (2, 3)
    assert is_square([[1, 2], [3, 4]])


def test_same_shape_and_column():
    assert same_shape([[1, 2]], [[3, 4]])
    assert column([[1, 2], [3, 4]], 1) == [2, 4]


def test_zeros_and_identity():
    assert zeros(2, 3) == [[0, 0, 0], [0, 0, 0]]
    assert identity(2) == [[1, 0], [0, 1]]
