from gridpath.coords import add, chebyshev, in_bounds, manhattan, neighbours, step


def test_add_and_step():
    assert add((1, 2), (3, 4)) == (4, 6)
    assert step((2, 2), "U") == (1, 2)


def test_manhattan_and_chebyshev():
    assert manhattan((0, 0), (3, 4)) == 7
    assert chebyshev((0, 0), (3, 4)) == 4


def test_in_bounds():
    assert in_bounds((1, 1), 3, 3)
    assert not in_bounds((3, 1), 3, 3)


def test_neighbours():
    assert neighbours((0, 0), 3, 3) == [(0, 1), (1, 0)]
