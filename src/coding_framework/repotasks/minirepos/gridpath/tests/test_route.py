from gridpath.route import follow, is_valid_path, largest_room, solve, walk


def test_walk_and_follow():
    assert walk((0, 0), "RRD") == (1, 2)
    assert follow(["..", "#."], (0, 0), "DRD") == (1, 1)


def test_is_valid_path():
    assert is_valid_path(["...", "..."], [(0, 0), (0, 1), (1, 1)])


def test_solve():
    assert solve("S.#\n..E") == 3


def test_largest_room():
    assert largest_room(["..#.", "..#."]) == 4
