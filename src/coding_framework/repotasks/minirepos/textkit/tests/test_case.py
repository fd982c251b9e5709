from textkit.case import split_identifier, title_case, to_camel, to_snake


def test_split_identifier():
    assert split_identifier("user_name") == ["user", "name"]


def test_snake_and_camel():
    assert to_snake("userName") == "user_name"
    assert to_camel("user_name") == "userName"


def test_title_case():
    assert title_case("war and peace") == "War and Peace"
