from statkit.spread import coefficient_of_variation, mean_abs_dev, squared_deviations, stdev, variance


def test_variance_sample_and_population():
    xs = [2, 4, 4, 4, 5, 5, 7, 9]
    assert squared_deviations(xs) == 32
    assert variance(xs, sample=False) == 4
    assert stdev(xs, sample=False) == 2


def test_mean_abs_dev():
    assert mean_abs_dev([1, 2, 3, 4]) == 1


def test_coefficient_of_variation():
    assert coefficient_of_variation([2, 4, 4, 4, 5, 5, 7, 9], sample=False) == 40
