from textkit.case import split_identifier, title_case, to_camel, to_snake


def test_split_identifier_kebab():
    assert split_identifier("a-b-c") == ["a", "b", "c"]


def test_split_identifier_camel():
    assert split_identifier("parseHttpRequest") == ["parse", "http", "request"]


def test_split_identifier_pascal():
    assert split_identifier("UserId") == ["user", "id"]


def test_split_identifier_repeated_separators():
    assert split_identifier("__a__b_") == ["a", "b"]


def test_split_identifier_mixed_styles():
    assert split_identifier("get_userName") == ["get", "user", "name"]


def test_split_identifier_empty():
    assert split_identifier("") == []


def test_to_snake_from_camel():
    assert to_snake("parseHttpRequest") == "parse_http_request"


def test_to_snake_custom_separator():
    assert to_snake("userName", "-") == "user-name"


def test_to_snake_already_snake():
    assert to_snake("already_snake") == "already_snake"


def test_to_camel_lower_first_by_default():
    assert to_camel("user-id") == "userId"
    assert to_camel("Name") == "name"


def test_to_camel_upper_first():
    assert to_camel("user_id", True) == "UserId"
    assert to_camel("name", upper_first=True) == "Name"


def test_to_camel_empty():
    assert to_camel("") == ""
    assert to_camel("__") == ""


def test_to_camel_three_parts():
    assert to_camel("max_line_length") == "maxLineLength"


def test_title_case_minor_words():
    assert title_case("the lord of the rings") == "The Lord of the Rings"


def test_title_case_second_word_minor():
    assert title_case("pride and prejudice") == "Pride and Prejudice"


def test_title_case_lowers_rest():
    assert title_case("HELLO WORLD") == "Hello World"


def test_title_case_custom_minor():
    assert title_case("a tale of two", minor=("two",)) == "A Tale Of two"


def test_title_case_empty():
    assert title_case("") == ""
