"""The one registry shape: a taken name is refused, the same entry again is a no-op, a miss lists names."""

from __future__ import annotations

import pytest

from coding_framework.config import ConfigError
from coding_framework.registry import Registry


def test_register_refuses_a_taken_name_and_accepts_the_same_entry_again() -> None:
    shapes: Registry[type] = Registry("shape")

    @shapes.register("square")
    class Square:
        pass

    assert shapes.register("square")(Square) is Square
    with pytest.raises(ValueError, match="shape 'square' is already registered"):
        shapes.register("square")(type("Other", (), {}))
    assert dict(shapes) == {"square": Square}


def test_a_miss_raises_the_registry_s_error_with_the_valid_names() -> None:
    colours: Registry[int] = Registry("colour", miss=ConfigError)
    colours.add("red", 1)
    colours.add("blue", 2)
    assert colours.resolve("red") == 1
    with pytest.raises(ConfigError, match=r"^unknown colour 'green'; valid colours: \['blue', 'red'\]$"):
        colours.resolve("green")
    families: Registry[int] = Registry("family", "families")
    with pytest.raises(ValueError, match="valid families: \\[\\]"):
        families.resolve("x")
