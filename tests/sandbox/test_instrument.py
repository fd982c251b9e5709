from __future__ import annotations

import pytest

from coding_framework.sandbox.judge import instrument


def _run(code, fmt, candidate=None):
    compiled, sources, _free = instrument.instrument(code, fmt)
    record: dict = {}
    ns = {
        instrument.RECORD_PASS: lambda i: record.__setitem__(i, True),
        instrument.RECORD_FAIL: lambda i, e: record.__setitem__(i, type(e).__name__),
        "f": candidate,
    }
    exec(compiled, ns)
    if fmt == "check_function":
        ns["check"](candidate)
    return sources, record


def test_each_top_level_assert_is_a_unit_and_failures_do_not_stop_later_units():
    code = (
        "x = 2\nassert f(1) == 1\nassert f(x) == 3\nfor i in range(3):\n    assert f(i) == i\nassert True\n"
    )
    sources, record = _run(code, "asserts", lambda v: v)
    assert len(sources) == 3  # the constant `assert True` is not a test
    assert record == {0: True, 1: "AssertionError", 2: True}


def test_check_function_body_is_instrumented():
    code = "def check(candidate):\n    import math\n    assert candidate(4) == 2\n    assert math.isclose(candidate(9), 3)\n"
    sources, record = _run(code, "check_function", lambda v: int(v**0.5))
    assert len(sources) == 2 and record == {0: True, 1: True}


def test_missing_check_function_and_unknown_format_are_errors():
    with pytest.raises(ValueError, match="check"):
        instrument.instrument("assert 1 == 1", "check_function")
    with pytest.raises(ValueError, match="format"):
        instrument.instrument("assert 1 == 1", "pytest")


def test_free_names():
    _code, _sources, free = instrument.instrument("assert f(1) == g(2)\nx = 3\n", "asserts")
    assert {"f", "g"} <= free
