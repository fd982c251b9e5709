import pytest
from gridpath.coords import add, chebyshev, in_bounds, manhattan, neighbours, step


def test_add_positive():
    assert add((1, 2), (3, 4)) == (4, 6)


def test_add_negative_offset():
    assert add((1, 1), (-1, 0)) == (0, 1)
    assert add((5, 3), (0, -3)) == (5, 0)


def test_add_zero():
    assert add((2, 7), (0, 0)) == (2, 7)


def test_manhattan_basic():
    assert manhattan((0, 0), (3, 4)) == 7


def test_manhattan_same_point():
    assert manhattan((2, 5), (2, 5)) == 0


def test_manhattan_order_does_not_matter():
    assert manhattan((5, 1), (1, 3)) == 6
    assert manhattan((1, 3), (5, 1)) == 6


def test_chebyshev_basic():
    assert chebyshev((0, 0), (3, 4)) == 4


def test_chebyshev_rows_dominate():
    assert chebyshev((4, 0), (0, 1)) == 4


def test_chebyshev_each_axis_separately():
    assert chebyshev((1, 2), (1, 7)) == 5
    assert chebyshev((6, 2), (1, 3)) == 5


def test_chebyshev_negative_and_same():
    assert chebyshev((0, 0), (2, -5)) == 5
    assert chebyshev((3, 3), (3, 3)) == 0


def test_in_bounds_corners():
    assert in_bounds((0, 0), 2, 5)
    assert in_bounds((1, 4), 2, 5)


def test_in_bounds_just_outside():
    assert not in_bounds((2, 0), 2, 5)
    assert not in_bounds((0, 5), 2, 5)


def test_in_bounds_negative():
    assert not in_bounds((-1, 0), 2, 5)
    assert not in_bounds((0, -1), 2, 5)


def test_in_bounds_rows_and_cols_not_swapped():
    assert in_bounds((0, 4), 2, 5)
    assert not in_bounds((4, 0), 2, 5)


def test_neighbours_middle():
    assert neighbours((1, 1), 3, 3) == [(0, 1), (1, 0), (1, 2), (2, 1)]


def test_neighbours_corner():
    assert neighbours((2, 2), 3, 3) == [(1, 2), (2, 1)]


def test_neighbours_diagonal_middle():
    expected = [(0, 0), (0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1), (2, 2)]
    assert neighbours((1, 1), 3, 3, True) == expected


def test_neighbours_diagonal_corner():
    assert neighbours((0, 0), 3, 3, diagonal=True) == [(0, 1), (1, 0), (1, 1)]


def test_neighbours_non_square():
    assert neighbours((1, 4), 2, 5) == [(0, 4), (1, 3)]
    assert neighbours((0, 3), 1, 4) == [(0, 2)]


def test_step_each_direction():
    assert step((2, 2), "U") == (1, 2)
    assert step((2, 2), "D") == (3, 2)
    assert step((2, 2), "L") == (2, 1)
    assert step((2, 2), "R") == (2, 3)


def test_step_unknown_move_raises():
    with pytest.raises(ValueError):
        step((0, 0), "u")
    with pytest.raises(ValueError):
        step((0, 0), "X")


def test_step_can_leave_the_first_row_and_column():
    assert step((0, 0), "L") == (0, -1)
    assert step((0, 0), "U") == (-1, 0)
