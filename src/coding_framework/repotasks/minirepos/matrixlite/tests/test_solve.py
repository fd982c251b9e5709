from matrixlite.solve import is_invertible, rank, row_echelon, solve2


def test_row_echelon_and_rank():
    assert row_echelon([[2, 4], [1, 3]]) == [[1, 2], [0, 1]]
    assert rank([[1, 2], [2, 4]]) == 1


def test_invertible():
    assert is_invertible([[1, 2], [3, 4]])


def test_solve_a_2x2_system():
    assert solve2([[2, 1], [1, 3]], [3, 5]) == [0.8, 1.4]
