from gridpath.grid import cell, count_cells, find, grid_size, is_open, parse_grid


def test_parse_grid_and_size():
    grid = parse_grid("..#\n#..")
    assert grid == ["..#", "#.."]
    assert grid_size(grid) == (2, 3)


def test_cell_and_is_open():
    assert cell(["ab", "cd"], (1, 0)) == "c"
    assert not is_open([".#"], (0, 1))


def test_find_and_count():
    assert find(["...", ".S."], "S") == (1, 1)
    assert count_cells(["..#", "#.."]) == 4
