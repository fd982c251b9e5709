"""Decontamination keeps honest problems: a mirror of a benchmark problem (the same template, another answer),
two statements that differ only in a function name that is a plain word, two solutions that differ only in a
string literal. A planted paraphrase is still caught (see also tests/training/run/test_user_data.py). Drops
have one of three kinds, and a pair whose call shape cannot be read stays a behaviour candidate.

The problems are MBPP's (tests/fixtures/decontamination_honest.jsonl): each pair is (training problem,
MBPP-test problem)."""

from __future__ import annotations

from pathlib import Path

import pytest

from coding_framework.problems import Problem, load_problem_records
from coding_framework.problems.decontaminate import (
    Contamination,
    DecontaminationSettings,
    call_compatible,
    find_contamination,
)

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "decontamination_honest.jsonl"
# (training problem, benchmark problem, why they are different tasks)
HONEST = [
    ("Mbpp/876", "Mbpp/498", "lcm vs gcd: the entry point is the statement's own word"),
    ("Mbpp/793", "Mbpp/195", "last vs first position: the entry point is the statement's own word"),
    ("Mbpp/647", "Mbpp/15", "split at upper- vs lower-case letters: only the regex literal differs"),
    ("Mbpp/4", "Mbpp/496", "largest vs smallest n integers (a mirror)"),
    ("Mbpp/807", "Mbpp/221", "first odd vs first even number (a mirror)"),
    ("Mbpp/824", "Mbpp/412", "remove even vs remove odd numbers (a mirror)"),
]


@pytest.fixture(scope="module")
def problems() -> dict[str, Problem]:
    return {p.task_id: p for p in load_problem_records(FIXTURE)}


@pytest.mark.parametrize(("train", "benchmark", "why"), HONEST)
def test_an_honest_problem_survives(problems: dict[str, Problem], train: str, benchmark: str,
                                    why: str) -> None:
    hits = find_contamination([problems[train]], {"mbpp:test": [problems[benchmark]]})
    assert hits == {}, f"{why}: {hits}"


def test_the_same_task_reworded_and_renamed_is_caught(problems: dict[str, Problem]) -> None:
    original = problems["Mbpp/217"]
    leak = original.model_copy(update={
        "task_id": "mine/1", "entry_point": "solve",
        "description": original.description.replace("Write a python function to", "Please"),
        "solutions": [s.replace(original.entry_point, "solve") for s in original.solutions],
        "test_code": original.test_code.replace(original.entry_point, "solve"),
    })
    hit = find_contamination([leak], {"mbpp:test": [original]})["mine/1"]
    assert (hit.matched, hit.drop_kind) == ("Mbpp/217", "exact")


def test_the_drop_policy_drops_a_mirror_that_keep_keeps(problems: dict[str, Problem]) -> None:
    train, against = [problems["Mbpp/824"]], {"mbpp:test": [problems["Mbpp/412"]]}
    assert find_contamination(train, against, DecontaminationSettings.for_mirror_tasks("keep")) == {}
    assert "Mbpp/824" in find_contamination(train, against, DecontaminationSettings.for_mirror_tasks("drop"))


def test_drop_kinds_are_exact_paraphrase_or_behaviour() -> None:
    kinds = {kind: Contamination("t", "b", "m", kind, 0.9).drop_kind
             for kind in ("exact_tests", "statement_ngrams", "solution_ngrams", "tests_ngrams", "behaviour")}
    assert kinds == {"exact_tests": "exact", "statement_ngrams": "paraphrase",
                     "solution_ngrams": "paraphrase", "tests_ngrams": "paraphrase", "behaviour": "behaviour"}


def test_a_call_shape_that_cannot_be_read_keeps_the_pair_a_candidate(problems: dict[str, Problem]) -> None:
    a = problems["Mbpp/217"]
    unreadable = a.model_copy(update={"task_id": "mine/2", "test_code": "assert first_repeated_char(*ARGS)"})
    assert call_compatible(a, unreadable) and call_compatible(unreadable, a)
