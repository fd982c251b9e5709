from statkit.scaling import clip, normalise, outliers, summary, zscores


def test_normalise_to_unit_range():
    assert normalise([10, 15, 20]) == [0, 0.5, 1]


def test_zscores_and_clip():
    assert zscores([2, 4, 4, 4, 5, 5, 7, 9]) == [-1.5, -0.5, -0.5, -0.5, 0, 0, 1, 2]
    assert clip([1, 5, 9], 2, 8) == [2, 5, 8]


def test_outliers_and_summary():
    assert outliers([1, 2, 3, 4, 100]) == [100]
    assert summary([1, 2, 3])["median"] == 2
