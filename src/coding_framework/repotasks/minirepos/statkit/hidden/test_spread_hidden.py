import pytest
from statkit.spread import coefficient_of_variation, mean_abs_dev, squared_deviations, stdev, variance


def test_squared_deviations_asymmetric():
    assert squared_deviations([1, 2, 6]) == 14


def test_squared_deviations_equal_values():
    assert squared_deviations([3, 3, 3]) == 0


def test_squared_deviations_empty_raises():
    with pytest.raises(ValueError):
        squared_deviations([])


def test_variance_is_a_sample_variance_by_default():
    assert variance([1, 2, 3, 4]) == 5 / 3


def test_variance_population():
    assert variance([1, 2, 3, 4], sample=False) == 1.25
    assert variance([2, 4, 4, 4, 5, 5, 7, 9], False) == 4


def test_variance_sample_of_two():
    assert variance([1, 3]) == 2


def test_variance_population_of_one():
    assert variance([5], sample=False) == 0


def test_variance_sample_of_one_raises():
    with pytest.raises(ValueError):
        variance([5])


def test_variance_empty_population_raises():
    with pytest.raises(ValueError):
        variance([], sample=False)


def test_stdev_defaults_to_sample_and_four_places():
    assert stdev([1, 2, 3, 4]) == 1.291


def test_stdev_population():
    assert stdev([2, 4, 4, 4, 5, 5, 7, 9], sample=False) == 2


def test_stdev_places():
    assert stdev([1, 2, 3, 4], True, 2) == 1.29
    assert stdev([1, 3]) == 1.4142


def test_stdev_sample_of_one_raises():
    with pytest.raises(ValueError):
        stdev([4])


def test_mean_abs_dev_fractional():
    assert mean_abs_dev([1, 2, 3, 4, 10]) == 2.4


def test_mean_abs_dev_rounds_to_four_places():
    assert mean_abs_dev([0, 0, 1]) == 0.4444


def test_mean_abs_dev_equal_values():
    assert mean_abs_dev([2, 2]) == 0


def test_mean_abs_dev_empty_raises():
    with pytest.raises(ValueError):
        mean_abs_dev([])


def test_coefficient_of_variation_sample_by_default():
    assert coefficient_of_variation([2, 4, 4, 4, 5, 5, 7, 9]) == 42.76


def test_coefficient_of_variation_population():
    assert coefficient_of_variation([2, 4, 4, 4, 5, 5, 7, 9], False) == 40


def test_coefficient_of_variation_negative_mean():
    assert coefficient_of_variation([-2, -4, -4, -4, -5, -5, -7, -9], sample=False) == 40


def test_coefficient_of_variation_zero_mean_raises():
    with pytest.raises(ValueError):
        coefficient_of_variation([-1, 1])
