"""Augmented copies: deterministic per seed, consistent renames, references still pass, no held-out leak."""

from __future__ import annotations

import random

import pytest

from coding_framework.problems import (
    Problem,
    augment,
    augment_split,
    builtin_problems,
    check_no_leak,
    root_task_id,
    synthetic_split,
)
from coding_framework.problems.augment import rename_identifiers, reword_prompt, shuffle_examples


@pytest.fixture(scope="module")
def problems() -> list[Problem]:
    train, heldout = synthetic_split(4)
    return builtin_problems() + train + heldout


def test_same_seed_same_copy_other_seed_other_copy(problems: list[Problem]) -> None:
    for p in problems[:20]:
        assert augment(p, 3) == augment(p, 3)
    assert any(augment(p, 3).prompt != augment(p, 4).prompt for p in problems[:20])


def test_copies_keep_their_lineage(problems: list[Problem]) -> None:
    p = problems[0]
    once = augment(p, 1)
    twice = augment(once, 2)
    assert once.task_id == f"{p.task_id}@aug1" and once.lineage == p.task_id
    assert twice.lineage == p.task_id and root_task_id(twice) == p.task_id == root_task_id(p)


def test_rename_is_consistent_across_prompt_tests_and_references(problems: list[Problem]) -> None:
    p = next(q for q in problems if q.entry_point == "second_largest")
    renamed = rename_identifiers(p, random.Random(0))
    assert renamed.entry_point != p.entry_point
    for text in (renamed.prompt, renamed.test_code, *renamed.solutions):
        assert "second_largest" not in text and "nums" not in text
        assert renamed.entry_point in text
    assert all(s.startswith(renamed.prompt) for s in renamed.solutions)
    assert renamed.prompt.count("\n") == p.prompt.count("\n")


def test_rename_leaves_other_functions_keywords_alone() -> None:
    p = Problem(
        task_id="t/kw",
        prompt='def order(xs, key):\n    """Sort xs by key."""\n',
        entry_point="order",
        test_code="assert order([3, 1], None) == [1, 3]\n",
        solutions=['def order(xs, key):\n    """Sort xs by key."""\n    return sorted(xs, key=key)\n'],
    )
    renamed = rename_identifiers(p, random.Random(0))
    assert renamed.entry_point != "order" and "key=key" in renamed.solutions[0]  # fell back: name only
    assert "xs" in renamed.prompt


def test_reword_and_shuffle_touch_only_the_docstring(problems: list[Problem]) -> None:
    p = next(q for q in problems if q.entry_point == "second_largest")
    rng = random.Random(5)
    reworded, shuffled = reword_prompt(p, rng), shuffle_examples(p, rng)
    for out in (reworded, shuffled):
        assert out.test_code == p.test_code and out.entry_point == p.entry_point
        assert out.prompt.splitlines()[0] == p.prompt.splitlines()[0]
        assert all(s.startswith(out.prompt) for s in out.solutions)
        assert [s[len(out.prompt) :] for s in out.solutions] == [s[len(p.prompt) :] for s in p.solutions]
    assert shuffled.prompt.count(">>>") == p.prompt.count(">>>")
    shown = [line.strip() for line in shuffled.prompt.splitlines() if ">>>" in line]
    tests = [line.replace("assert ", ">>> ").split(" == ")[0] for line in p.test_code.splitlines()]
    assert all(line in tests for line in shown)
    wordings = {reword_prompt(p, random.Random(seed)).prompt for seed in range(10)}
    assert len(wordings) >= 3 and all("the second largest" in w for w in wordings)


@pytest.mark.slow
def test_augmented_references_still_pass(problems: list[Problem]) -> None:
    from coding_framework.config import SandboxConfig
    from coding_framework.grading import Grader

    copies = [augment(p, 7) for p in problems]
    items = [(p, s) for p in copies for s in p.solutions]
    with Grader(SandboxConfig(workers=4)) as grader:
        results = grader.grade_many(items)
    assert [p.task_id for (p, _), r in zip(items, results, strict=True) if not r.passed] == []
    renamed = [
        p for p, original in zip(copies, problems, strict=True) if p.entry_point != original.entry_point
    ]
    assert len(renamed) == len(copies)


def test_augmented_heldout_stays_heldout() -> None:
    train, heldout = synthetic_split(4)
    train, heldout = train[::5], heldout[::3]  # a sample across the families
    grown_train, grown_heldout = augment_split(train, heldout, seed=0, copies=2)
    assert len(grown_train) == 3 * len(train) and len(grown_heldout) == 3 * len(heldout)
    held_roots = {root_task_id(p) for p in heldout}
    assert all(root_task_id(p) not in held_roots for p in grown_train)
    with pytest.raises(ValueError, match="held-out problems leak into training"):
        check_no_leak([*train, augment(heldout[0], 9)], heldout)
    instance = heldout[0].model_copy(update={"task_id": "t/fresh-instance"})  # same held-out constant
    with pytest.raises(ValueError, match="t/fresh-instance"):
        check_no_leak([instance], heldout)


def test_only_code_prompts_and_known_kinds() -> None:
    statement = Problem(task_id="t/s", prompt="Add.", entry_point="add", test_code="assert add(1, 1) == 2\n",
                        prompt_is_code=False)  # fmt: skip
    with pytest.raises(ValueError, match="prompt is code"):
        augment(statement, 0)
    with pytest.raises(ValueError, match="unknown augmentation"):
        augment(builtin_problems()[0], 0, ["rotate"])
