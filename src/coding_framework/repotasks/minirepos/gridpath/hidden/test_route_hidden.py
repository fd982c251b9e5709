import pytest
from gridpath.route import follow, is_valid_path, largest_room, room_sizes, solve, walk


def test_walk_moves():
    assert walk((0, 0), "RRD") == (1, 2)


def test_walk_no_moves():
    assert walk((3, 4), "") == (3, 4)


def test_walk_goes_negative():
    assert walk((0, 0), "UL") == (-1, -1)


def test_walk_bad_move_raises():
    with pytest.raises(ValueError):
        walk((0, 0), "RX")


def test_follow_blocked_by_wall():
    assert follow(["..", "#."], (0, 0), "D") == (0, 0)


def test_follow_around_wall():
    assert follow(["..", "#."], (0, 0), "RD") == (1, 1)


def test_follow_skips_moves_off_grid():
    assert follow(["..", "#."], (0, 0), "ULR") == (0, 1)


def test_follow_no_moves():
    assert follow(["..."], (0, 2), "") == (0, 2)


def test_is_valid_path_empty():
    assert not is_valid_path(["..."], [])


def test_is_valid_path_single_cell():
    assert is_valid_path(["..."], [(0, 1)])
    assert not is_valid_path([".#."], [(0, 1)])


def test_is_valid_path_through_wall():
    assert not is_valid_path([".#."], [(0, 0), (0, 1), (0, 2)])


def test_is_valid_path_rejects_diagonal_and_jumps():
    assert not is_valid_path(["..", ".."], [(0, 0), (1, 1)])
    assert not is_valid_path(["..."], [(0, 0), (0, 2)])


def test_is_valid_path_rejects_standing_still():
    assert not is_valid_path(["..."], [(0, 0), (0, 0)])


def test_is_valid_path_off_grid():
    assert not is_valid_path(["..."], [(0, 2), (0, 3)])


def test_is_valid_path_long():
    assert is_valid_path(["...", "#.."], [(0, 0), (0, 1), (1, 1), (1, 2), (0, 2)])


def test_solve_default_marks():
    assert solve("S.#\n..E") == 3


def test_solve_detour():
    assert solve("S#...\n.#.#.\n...#E") == 10


def test_solve_adjacent():
    assert solve("SE") == 1


def test_solve_custom_marks():
    assert solve("a..\n##b", "a", "b") == 3


def test_solve_no_way():
    assert solve("S#E") == -1


def test_solve_missing_mark_raises():
    with pytest.raises(ValueError):
        solve("S..")
    with pytest.raises(ValueError):
        solve("..E")


def test_room_sizes_largest_first():
    assert room_sizes([".#..", "##..", "#..."]) == [7, 1]


def test_room_sizes_each_room_once():
    assert room_sizes(["..#.", "..#.", "###."]) == [4, 3]


def test_room_sizes_no_rooms():
    assert room_sizes(["##"]) == []
    assert room_sizes([]) == []


def test_room_sizes_single_cells():
    assert room_sizes([".#.", "#.#"]) == [1, 1, 1]


def test_largest_room_picks_biggest():
    assert largest_room(["..#.", "..#."]) == 4
    assert largest_room([".#..", "##..", "...."]) == 8


def test_largest_room_all_walls_or_empty():
    assert largest_room(["##", "##"]) == 0
    assert largest_room([]) == 0


def test_largest_room_single_cell():
    assert largest_room(["#.#"]) == 1


def test_largest_room_non_square():
    assert largest_room(["...#.", "#####"]) == 3
