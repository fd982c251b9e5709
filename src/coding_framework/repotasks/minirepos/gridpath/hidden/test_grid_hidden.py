import pytest
from gridpath.grid import cell, count_cells, find, grid_size, is_open, parse_grid


def test_parse_grid_strips_and_skips_blank_lines():
    assert parse_grid("\n  ab \n\n cd\n") == ["ab", "cd"]


def test_parse_grid_single_row():
    assert parse_grid("S.E") == ["S.E"]


def test_parse_grid_ragged_raises():
    with pytest.raises(ValueError):
        parse_grid("...\n..")
    with pytest.raises(ValueError):
        parse_grid("..\n..\n...")


def test_parse_grid_empty_raises():
    with pytest.raises(ValueError):
        parse_grid("")
    with pytest.raises(ValueError):
        parse_grid("\n   \n")


def test_grid_size_empty():
    assert grid_size([]) == (0, 0)


def test_grid_size_rectangular():
    assert grid_size(["abc", "def"]) == (2, 3)


def test_grid_size_single_cell():
    assert grid_size(["a"]) == (1, 1)


def test_cell_reads_row_then_column():
    assert cell(["ab", "cd"], (1, 0)) == "c"
    assert cell(["ab", "cd"], (0, 1)) == "b"


def test_cell_last():
    assert cell(["abc", "def"], (1, 2)) == "f"


def test_cell_outside_raises():
    with pytest.raises(IndexError):
        cell(["ab", "cd"], (2, 0))
    with pytest.raises(IndexError):
        cell(["ab", "cd"], (0, 2))
    with pytest.raises(IndexError):
        cell(["ab", "cd"], (-1, 0))


def test_is_open_floor_and_wall():
    assert is_open([".#"], (0, 0))
    assert not is_open([".#"], (0, 1))


def test_is_open_outside_is_false():
    assert not is_open(["..", ".."], (2, 0))
    assert not is_open(["..", ".."], (0, -1))


def test_is_open_default_wall_only():
    assert is_open(["x#"], (0, 0))


def test_is_open_custom_wall():
    assert not is_open(["a."], (0, 0), "a")
    assert is_open(["#."], (0, 0), "a")


def test_find_reading_order():
    assert find(["..S", "S.."], "S") == (0, 2)


def test_find_later_row():
    assert find(["...", ".E."], "E") == (1, 1)


def test_find_first_cell():
    assert find(["S.", ".."], "S") == (0, 0)


def test_find_missing():
    assert find(["...", "..."], "E") is None
    assert find([], "E") is None


def test_count_cells_default_mark():
    assert count_cells(["..#", "#.."]) == 4


def test_count_cells_other_mark():
    assert count_cells(["..#", "#.."], "#") == 2


def test_count_cells_empty():
    assert count_cells([]) == 0
    assert count_cells(["###"]) == 0
