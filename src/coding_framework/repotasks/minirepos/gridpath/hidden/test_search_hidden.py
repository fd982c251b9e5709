from gridpath.search import distances, flood_fill_area, open_neighbours, shortest_path_length


def test_open_neighbours_skips_walls():
    assert open_neighbours(["...", ".#.", "..."], (0, 1)) == [(0, 0), (0, 2)]


def test_open_neighbours_diagonal():
    assert open_neighbours(["...", ".#.", "..."], (0, 1), True) == [(0, 0), (0, 2), (1, 0), (1, 2)]


def test_open_neighbours_non_square():
    assert open_neighbours(["....", "#..."], (0, 3)) == [(0, 2), (1, 3)]
    assert open_neighbours(["....", "#..."], (0, 0)) == [(0, 1)]


def test_distances_open_square():
    assert distances(["..", ".."], (0, 0)) == {(0, 0): 0, (0, 1): 1, (1, 0): 1, (1, 1): 2}


def test_distances_diagonal():
    assert distances(["..", ".."], (0, 0), True) == {(0, 0): 0, (0, 1): 1, (1, 0): 1, (1, 1): 1}


def test_distances_wall_start():
    assert distances(["#."], (0, 0)) == {}


def test_distances_blocked():
    assert distances([".#."], (0, 0)) == {(0, 0): 0}


def test_distances_corridor():
    assert distances(["...."], (0, 1)) == {(0, 0): 1, (0, 1): 0, (0, 2): 1, (0, 3): 2}


def test_shortest_path_length_detour():
    grid = [".#...", ".#.#.", "...#."]
    assert shortest_path_length(grid, (0, 0), (0, 2)) == 6
    assert shortest_path_length(grid, (0, 0), (2, 4)) == 10


def test_shortest_path_length_same_cell():
    assert shortest_path_length(["..", ".."], (1, 1), (1, 1)) == 0


def test_shortest_path_length_unreachable():
    assert shortest_path_length([".#."], (0, 0), (0, 2)) == -1


def test_shortest_path_length_wall_endpoints():
    assert shortest_path_length(["#.."], (0, 0), (0, 2)) == -1
    assert shortest_path_length(["..#"], (0, 0), (0, 2)) == -1


def test_shortest_path_length_diagonal():
    assert shortest_path_length(["...", "...", "..."], (0, 0), (2, 2)) == 4
    assert shortest_path_length(["...", "...", "..."], (0, 0), (2, 2), True) == 2


def test_flood_fill_area_separate_rooms():
    assert flood_fill_area(["..#..", "..#.."], (0, 0)) == 4
    assert flood_fill_area(["..#.", "..#."], (1, 3)) == 2


def test_flood_fill_area_wall_start():
    assert flood_fill_area(["#."], (0, 0)) == 0


def test_flood_fill_area_not_diagonal():
    assert flood_fill_area([".#", "#."], (0, 0)) == 1


def test_flood_fill_area_whole_grid():
    assert flood_fill_area(["...", "..."], (1, 2)) == 6
