"""Decontamination by behaviour: the same task told in other words is caught when each reference passes the
other's tests in the real grader (MBPP's asserts name the function, HumanEval's check takes the entry
point); a sibling with another answer, or another signature, is kept; verdicts are cached."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from coding_framework.config import SandboxConfig
from coding_framework.evaluation.decontamination import (
    BehaviourCache,
    bound_program,
    decontaminate,
    same_behaviour,
)
from coding_framework.grading import Grader
from coding_framework.problems import Problem
from coding_framework.problems.decontaminate import behaviour_candidates, call_compatible, drops_by_kind

# MBPP style: the asserts call the function by its name.
LENGTH = Problem(
    task_id="mine/length", entry_point="string_length", prompt="Find length of the string.",
    description="Write a function to find length of the string.",
    solutions=["def string_length(str1):\n    count = 0\n    for _ in str1:\n        count += 1\n"
               "    return count\n"],
    test_code="assert string_length('python') == 6\nassert string_length('ab') == 2\n",
)
# HumanEval style: check(candidate) gets the entry point.
STRLEN = Problem(
    task_id="HumanEval/23", entry_point="strlen", test_format="check_function",
    prompt='def strlen(string: str) -> int:\n    """ Return length of given string\n    """\n',
    description="Return length of given string",
    solutions=["def strlen(string: str) -> int:\n    return len(string)\n"],
    test_code="def check(candidate):\n    assert candidate('') == 0\n    assert candidate('asdasn') == 6\n",
)
# The same template, another answer: the number of vowels in the string.
VOWELS = Problem(
    task_id="mine/vowels", entry_point="count_vowels", prompt="Write a function to count vowels in a string.",
    description="Write a function to count vowels of the string.",
    solutions=["def count_vowels(s):\n    return sum(c in 'aeiou' for c in s)\n"],
    test_code="assert count_vowels('python') == 1\nassert count_vowels('aab') == 2\n",
)
# Another answer's kind: a string in, a bool out.
IS_EMPTY = Problem(
    task_id="mine/empty", entry_point="is_empty", prompt="Write a function to check the string is empty.",
    solutions=["def is_empty(s):\n    return not s\n"],
    test_code="assert is_empty('') == True\nassert is_empty('ab') == False\n",
)
# The same words, two arguments: never graded against a one-argument problem.
PAIR_LENGTH = Problem(
    task_id="mine/pair", entry_point="pair_length", prompt="Write a function to find length of two strings.",
    description="Write a function to find length of two strings.",
    solutions=["def pair_length(a, b):\n    return len(a) + len(b)\n"],
    test_code="assert pair_length('ab', 'c') == 3\n",
)


@pytest.fixture(scope="module")
def grader() -> Iterator[Grader]:
    with Grader(SandboxConfig(workers=2)) as g:
        yield g


def test_the_entry_point_is_bound_to_the_other_problems_name() -> None:
    assert bound_program(LENGTH, STRLEN).endswith("\n\nstrlen = string_length\n")
    assert bound_program(STRLEN, LENGTH).endswith("\n\nstring_length = strlen\n")
    same_name = LENGTH.model_copy(update={"task_id": "mine/copy"})
    assert bound_program(LENGTH, same_name) == LENGTH.solutions[0]


def test_the_arguments_and_the_expected_kinds_decide_which_pairs_are_candidates() -> None:
    assert call_compatible(LENGTH, STRLEN) and call_compatible(STRLEN, LENGTH)
    assert not call_compatible(LENGTH, PAIR_LENGTH)  # one argument vs two
    assert not call_compatible(LENGTH, IS_EMPTY)  # str -> number vs str -> bool
    found = behaviour_candidates([LENGTH, PAIR_LENGTH, IS_EMPTY], {"humaneval": [STRLEN]})
    assert [(p.task_id, b.task_id) for p, _, b in found] == [("mine/length", "HumanEval/23")]


def test_the_same_task_in_other_words_passes_both_ways_and_a_sibling_does_not(grader: Grader) -> None:
    pairs = [(LENGTH, STRLEN), (VOWELS, LENGTH), (LENGTH, VOWELS)]
    assert same_behaviour(pairs, grader) == [True, False, False]


def test_decontaminate_drops_by_behaviour_what_the_text_check_keeps(grader: Grader, tmp_path: Path) -> None:
    against = {"humaneval": [STRLEN]}
    assert decontaminate([LENGTH, VOWELS], against) == {}  # the words share too little
    cache = BehaviourCache(tmp_path / "verdicts.json")
    hits = decontaminate([LENGTH, VOWELS], against, grader=grader, cache=cache)
    assert list(hits) == ["mine/length"]
    hit = hits["mine/length"]
    assert (hit.against, hit.matched, hit.kind, hit.drop_kind) == ("humaneval", "HumanEval/23", "behaviour",
                                                                   "behaviour")
    rows = [{"kind": hit.drop_kind}, {"kind": "exact"}, {"kind": "behaviour"}]
    assert drops_by_kind(rows) == {"behaviour": 2, "exact": 1}
    # Saved: the length pair both ways; the vowels pair (str -> number too) one way, as it failed there.
    assert len(BehaviourCache(tmp_path / "verdicts.json").verdicts) == 3


def test_a_cached_verdict_is_not_graded_again(grader: Grader, tmp_path: Path) -> None:
    cache = BehaviourCache(tmp_path / "verdicts.json")
    assert same_behaviour([(LENGTH, STRLEN)], grader, cache) == [True]
    cache.save()

    class Refuses(Grader):
        def grade_many(self, *args: object, **kwargs: object) -> list:  # type: ignore[override]
            raise AssertionError("graded a cached pair")

    assert same_behaviour([(LENGTH, STRLEN)], Refuses(), BehaviourCache(tmp_path / "verdicts.json")) == [True]


def test_a_broken_cache_file_is_one_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "verdicts.json"
    bad.write_text("[1, 2]")
    with pytest.raises(ValueError, match="is not a behaviour cache"):
        BehaviourCache(bad)
