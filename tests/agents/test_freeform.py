from __future__ import annotations

import pytest

from coding_framework.agents.freeform import has_tests, problem_from_text


@pytest.mark.parametrize(
    ("text", "entry"),
    [
        ("Write a function fib(n) that returns the n-th Fibonacci number.", "fib"),
        ("Implement `def rev_words(s: str) -> str` reversing word order.", "rev_words"),
        ("Create a function named `is_even(n)`.", "is_even"),
        ("Reverse a string.", "solution"),
    ],
)
def test_entry_point_comes_from_the_text(text: str, entry: str) -> None:
    problem = problem_from_text(text)
    assert problem.entry_point == entry
    assert problem.prompt == text
    assert not problem.prompt_is_code
    assert not has_tests(problem)


def test_explicit_entry_point_wins_and_ids_are_stable() -> None:
    a = problem_from_text("Reverse a string.", entry_point="rev")
    assert a.entry_point == "rev"
    assert a.task_id == problem_from_text("Reverse a string.").task_id


def test_empty_text_is_refused() -> None:
    with pytest.raises(ValueError, match="empty"):
        problem_from_text("   ")


def test_has_tests_sees_real_assertions(add_problem) -> None:
    assert has_tests(add_problem)
    assert not has_tests(add_problem.model_copy(update={"test_code": "assert True\nx = 1\n"}))
