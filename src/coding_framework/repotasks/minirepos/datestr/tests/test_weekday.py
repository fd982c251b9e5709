from datestr.weekday import is_weekend, next_weekday, weekday, weekday_name, zeller


def test_zeller_and_weekday():
    assert zeller(2024, 3, 1) == 6
    assert weekday((2024, 3, 1)) == 4


def test_weekday_name():
    assert weekday_name((2024, 3, 1)) == "Friday"


def test_is_weekend():
    assert is_weekend((2024, 3, 2))
    assert not is_weekend((2024, 3, 4))


def test_next_weekday():
    assert next_weekday((2024, 3, 1), 0) == (2024, 3, 4)
