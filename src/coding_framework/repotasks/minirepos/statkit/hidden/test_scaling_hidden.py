import pytest
from statkit.scaling import clip, normalise, outliers, summary, zscores


def test_normalise_defaults_to_zero_one():
    assert normalise([10, 15, 20, 12]) == [0, 0.5, 1, 0.2]


def test_normalise_rounds_to_four_places():
    assert normalise([0, 1, 3]) == [0, 0.3333, 1]


def test_normalise_target_range():
    assert normalise([0, 5, 10], -1, 1) == [-1, 0, 1]
    assert normalise([0, 5, 10], 10, 20) == [10, 15, 20]


def test_normalise_equal_values_go_to_lo():
    assert normalise([3, 3]) == [0, 0]
    assert normalise([3, 3], 2, 4) == [2, 2]


def test_normalise_empty_list():
    assert normalise([]) == []


def test_normalise_empty_target_range_raises():
    with pytest.raises(ValueError):
        normalise([1, 2], 1, 1)


def test_zscores_population_by_default():
    assert zscores([2, 4, 4, 4, 5, 5, 7, 9]) == [-1.5, -0.5, -0.5, -0.5, 0, 0, 1, 2]


def test_zscores_sample_rounded():
    assert zscores([2, 4, 4, 4, 5, 5, 7, 9], sample=True) == [-1.4, -0.47, -0.47, -0.47, 0, 0, 0.94, 1.87]


def test_zscores_places():
    assert zscores([2, 4, 4, 4, 5, 5, 7, 9], 3, True)[-1] == 1.871


def test_zscores_equal_values_raise():
    with pytest.raises(ValueError):
        zscores([4, 4, 4])


def test_clip_both_sides():
    assert clip([1, 5, 9], 2, 8) == [2, 5, 8]


def test_clip_inside_values_unchanged():
    assert clip([2, 3, 8], 2, 8) == [2, 3, 8]


def test_clip_to_a_single_value():
    assert clip([1, 5], 3, 3) == [3, 3]


def test_clip_empty_range_raises():
    with pytest.raises(ValueError):
        clip([1, 5], 4, 3)


def test_outliers_high():
    assert outliers([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 22]) == [22]


def test_outliers_low():
    assert outliers([-8, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]) == [-8]


def test_outliers_on_the_fence_are_kept():
    assert outliers([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 20.5]) == []
    assert outliers([-6.5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]) == []


def test_outliers_wider_fence():
    assert outliers([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 22], 2) == []


def test_summary_of_several_values():
    expected = {"count": 5, "mean": 4, "median": 3, "stdev": 3.5355, "min": 1, "max": 10}
    assert summary([1, 2, 3, 4, 10]) == expected


def test_summary_of_two_values():
    assert summary([3, 1]) == {"count": 2, "mean": 2, "median": 2, "stdev": 1.4142, "min": 1, "max": 3}


def test_summary_of_one_value():
    assert summary([4]) == {"count": 1, "mean": 4, "median": 4, "stdev": 0, "min": 4, "max": 4}


def test_summary_mean_rounded():
    assert summary([1, 1, 2])["mean"] == 1.3333
