"""Synthetic families: registry, reproducible instances, and a held-out split with unseen constants."""

from __future__ import annotations

import ast
from collections import Counter, defaultdict

import pytest

from coding_framework.problems import (
    FAMILIES,
    generate_instances,
    load_benchmark,
    reserved_split,
    synthetic_split,
)
from coding_framework.problems.synthetic import get_family, register_family


def _const(problem) -> str:
    (tag,) = [t for t in problem.tags if t.startswith("const:")]
    return tag.removeprefix("const:")


def test_registry_has_at_least_ten_families_of_varied_difficulty() -> None:
    assert len(FAMILIES) >= 10
    assert {f.difficulty for f in FAMILIES.values()} == {"easy", "medium", "hard"}
    assert all(name == fam.name and len(fam.domain) >= 10 for name, fam in FAMILIES.items())


def test_unknown_family_lists_the_valid_names() -> None:
    with pytest.raises(ValueError, match=r"unknown synthetic family 'nope'; valid families: \['add_cons"):
        get_family("nope")
    with pytest.raises(ValueError, match="unknown synthetic family"):
        generate_instances("nope", 3)


def test_a_duplicate_family_name_is_rejected() -> None:
    existing = FAMILIES["add_constant"]
    with pytest.raises(ValueError, match="synthetic family 'add_constant' is already registered"):
        register_family("add_constant", "hard", ["lists"], range(3))(FAMILIES["count_char"].build)
    assert FAMILIES["add_constant"] is existing


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_instances_are_distinct_reproducible_and_well_formed(family: str) -> None:
    problems = generate_instances(family, 12, seed=3)
    assert len({p.task_id for p in problems}) == 12
    assert generate_instances(family, 12, seed=3) == problems
    assert generate_instances(family, 12, seed=4) != problems
    for p in problems:
        assert p.source == f"synthetic:{family}" and p.tags[0] == family
        assert p.difficulty == FAMILIES[family].difficulty
        (fn,) = ast.parse(p.prompt).body
        assert isinstance(fn, ast.FunctionDef) and fn.name == p.entry_point
        assert ast.literal_eval(_const(p)) is not None
        shown = str(ast.literal_eval(_const(p)))
        assert shown in ast.get_docstring(fn), (p.task_id, shown)  # the constant is stated, ready to copy
        asserts = p.test_code.splitlines()
        assert len(asserts) >= 4 and all(a.startswith("assert ") for a in asserts)
        assert len(p.solutions) >= 2 and all(s.startswith(p.prompt) for s in p.solutions)


def test_instances_vary_constants_and_names() -> None:
    problems = generate_instances("add_constant", 30, seed=0)
    assert len({_const(p) for p in problems}) == 30  # a 60-value domain is cycled before any repeat
    assert len({p.entry_point for p in generate_instances("clip_range", 30, seed=0)}) > 1


def test_restricted_values_are_respected() -> None:
    problems = generate_instances("divisible_by", 8, seed=1, values=[7, 11])
    assert {_const(p) for p in problems} == {"7", "11"}
    with pytest.raises(ValueError, match="no constant values"):
        generate_instances("divisible_by", 1, values=[])


def test_split_sizes_and_disjoint_constants() -> None:
    train, heldout = synthetic_split(n_per_family=20, heldout_fraction=0.25, seed=0)
    assert len(train) == 15 * len(FAMILIES) and len(heldout) == 5 * len(FAMILIES)
    assert not {p.task_id for p in train} & {p.task_id for p in heldout}
    seen: dict[str, set[str]] = defaultdict(set)
    for p in train:
        seen[p.tags[0]].add(_const(p))
    for p in heldout:
        assert _const(p) not in seen[p.tags[0]], p.task_id
    assert Counter(p.tags[0] for p in heldout) == {name: 5 for name in FAMILIES}


def test_split_is_reproducible_and_seeded() -> None:
    assert synthetic_split(8, 0.25, seed=5) == synthetic_split(8, 0.25, seed=5)
    held_a = {_const(p) for p in synthetic_split(8, 0.25, seed=5)[1] if p.tags[0] == "add_constant"}
    held_b = {_const(p) for p in synthetic_split(8, 0.25, seed=6)[1] if p.tags[0] == "add_constant"}
    assert held_a != held_b


def test_instance_seed_gives_fresh_instances_of_the_training_constants() -> None:
    train, heldout = synthetic_split(12, 0.25, seed=0)
    fresh, _ = synthetic_split(12, 0.25, seed=0, instance_seed=1)
    assert len(fresh) == len(train)
    assert not {p.task_id for p in fresh} & {p.task_id for p in train}
    held = {(p.tags[0], _const(p)) for p in heldout}
    assert not {(p.tags[0], _const(p)) for p in fresh} & held


def test_split_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="heldout_fraction"):
        synthetic_split(heldout_fraction=1.0)
    with pytest.raises(ValueError, match="n_per_family"):
        synthetic_split(n_per_family=1)


def test_load_benchmark_splits() -> None:
    train, heldout = synthetic_split()
    assert load_benchmark("synthetic", split="train") == train
    assert load_benchmark("synthetic", split="heldout") == heldout
    assert load_benchmark("synthetic") == train + heldout


def test_reserved_split_trains_and_evaluates_on_constants_sft_never_saw() -> None:
    sft_train, sft_heldout = synthetic_split(200, 0.25, seed=0)  # enough instances to use every constant
    train, heldout = reserved_split(12, 0.25, seed=0, train_share=0.5, instance_seed=1)
    assert Counter(p.tags[0] for p in train) == {name: 9 for name in FAMILIES}
    assert Counter(p.tags[0] for p in heldout) == {name: 3 for name in FAMILIES}
    sft_consts = {(p.tags[0], _const(p)) for p in sft_train}
    reserved = {(p.tags[0], _const(p)) for p in sft_heldout}
    train_consts = {(p.tags[0], _const(p)) for p in train}
    heldout_consts = {(p.tags[0], _const(p)) for p in heldout}
    assert not train_consts & sft_consts and not heldout_consts & sft_consts
    assert not train_consts & heldout_consts and train_consts | heldout_consts <= reserved
    assert {name for name, _ in train_consts} == set(FAMILIES)  # every family trains on some constants
    assert reserved_split(12, 0.25, seed=0, train_share=0.5, instance_seed=1) == (train, heldout)
    with pytest.raises(ValueError, match="train_share"):
        reserved_split(train_share=1.0)
