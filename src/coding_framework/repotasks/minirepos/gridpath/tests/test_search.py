from gridpath.search import distances, flood_fill_area, open_neighbours, shortest_path_length


def test_open_neighbours():
    assert open_neighbours(["...", ".#.", "..."], (0, 1)) == [(0, 0), (0, 2)]


def test_distances():
    assert distances(["..", ".."], (0, 0)) == {(0, 0): 0, (0, 1): 1, (1, 0): 1, (1, 1): 2}


def test_shortest_path_length():
    assert shortest_path_length(["....", ".##.", "...."], (0, 0), (2, 3)) == 5


def test_flood_fill_area():
    assert flood_fill_area(["..#..", "..#.."], (0, 0)) == 4
