from __future__ import annotations

import ast

import pytest

from coding_framework.repotasks.mutations import MUTATION_KINDS, MutationError, enumerate_mutations

SAMPLE = '''"""A module: the text around the mutated function must survive unchanged."""

LIMIT = 3  # not in the function: never mutated


def helper(a, b):
    return a - b  # «helper» is not the target


def target(values, sep=",", strict=True, start=1):
    """Sum what is in range."""
    total = 0
    for i in range(start, len(values)):
        if values[i] < LIMIT:
            total += values[i] * 2
        elif values[i] >= 10:
            total = helper(total, values[i])
        else:
            total = total % 7
    if strict:
        total = total + values[-1]
    return sep.join([str(total), "«ok»"])


def after(x):
    return x + 1
'''


def _outside(source: str) -> tuple[str, str]:
    lines = source.splitlines(keepends=True)
    function = next(
        n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "target"
    )
    return "".join(lines[: function.lineno - 1]), "".join(lines[function.end_lineno :])


def _target_text(source: str) -> str:
    before, after = _outside(source)
    return source[len(before) : len(source) - len(after)]


def test_every_kind_yields_parseable_different_code_and_the_rest_survives() -> None:
    mutations = enumerate_mutations(SAMPLE, "target", ["helper"])
    assert {m.kind for m in mutations} == set(MUTATION_KINDS)
    before, after = _outside(SAMPLE)
    original = ast.dump(ast.parse(SAMPLE))
    for mutation in mutations:
        assert mutation.function == "target"
        assert ast.dump(ast.parse(mutation.new_source)) != original
        assert mutation.new_source.startswith(before), mutation.description
        assert mutation.new_source.endswith(after), mutation.description
    assert len({m.new_source for m in mutations}) == len(mutations)
    assert [m.kind for m in mutations] == sorted((m.kind for m in mutations), key=MUTATION_KINDS.index)


def test_the_order_is_deterministic() -> None:
    assert enumerate_mutations(SAMPLE, "target", ["helper"]) == enumerate_mutations(
        SAMPLE, "target", ["helper"]
    )


def _edits(kind: str) -> list[str]:
    """For each mutation of ``kind``: the target's changed lines, old -> new."""
    old = _target_text(SAMPLE).splitlines()
    out = []
    for mutation in enumerate_mutations(SAMPLE, "target", ["helper"]):
        if mutation.kind != kind:
            continue
        new = _target_text(mutation.new_source).splitlines()
        if len(new) == len(old):
            out.append(
                " / ".join(f"{a.strip()} -> {b.strip()}" for a, b in zip(old, new, strict=True) if a != b)
            )
        else:
            out.append(f"{len(old) - len(new)} lines removed")
    return out


def test_operator_swap() -> None:
    assert _edits("operator_swap") == [
        "total += values[i] * 2 -> total -= values[i] * 2",
        "total += values[i] * 2 -> total += values[i] / 2",
        "total = total % 7 -> total = total // 7",
        "total = total + values[-1] -> total = total - values[-1]",
    ]


def test_comparison_swap() -> None:
    assert _edits("comparison_swap") == [
        "if values[i] < LIMIT: -> if values[i] <= LIMIT:",
        "elif values[i] >= 10: -> elif values[i] > 10:",
    ]


def test_off_by_one_changes_bounds_indexes_and_operands() -> None:
    edits = _edits("off_by_one")
    assert "total += values[i] * 2 -> total += values[i] * 3" in edits
    assert "elif values[i] >= 10: -> elif values[i] >= 11:" in edits
    assert "total = total + values[-1] -> total = total + values[-2]" in edits
    assert "total = total + values[-1] -> total = total + values[-0]" in edits
    assert not [e for e in edits if e.startswith("total = 0")]  # an initial value is not a bound


def test_dropped_branch_removes_elif_else_and_plain_if() -> None:
    mutations = [m for m in enumerate_mutations(SAMPLE, "target") if m.kind == "dropped_branch"]
    texts = [_target_text(m.new_source) for m in mutations]
    assert [m.description.split(" (")[0] for m in mutations] == [
        "`elif` branch removed",
        "`else` branch removed",
        "`if` block removed",
    ]
    assert "elif" not in texts[0] and "else:\n            total = total % 7" in texts[0]
    assert "else" not in texts[1] and "elif values[i] >= 10:" in texts[1]
    assert "if strict" not in texts[2] and "return sep.join" in texts[2]


def test_a_sole_if_becomes_pass() -> None:
    source = "def f(x):\n    for i in x:\n        if i:\n            print(i)\n    return x\n"
    (mutation,) = [m for m in enumerate_mutations(source, "f") if m.kind == "dropped_branch"]
    assert mutation.new_source == "def f(x):\n    for i in x:\n        pass\n    return x\n"


def test_wrong_default() -> None:
    signatures = [e.split(" -> ")[1] for e in _edits("wrong_default")]
    assert signatures == [
        'def target(values, sep=";", strict=True, start=1):',
        'def target(values, sep=",", strict=False, start=1):',
        'def target(values, sep=",", strict=True, start=2):',
    ]
    assert not [
        m for m in enumerate_mutations("def f(x=None):\n    return x\n", "f") if m.kind == "wrong_default"
    ]


def test_swapped_argument_only_for_package_functions() -> None:
    assert _edits("swapped_argument") == [
        "total = helper(total, values[i]) -> total = helper(values[i], total)",
    ]
    source = "def f(a, b):\n    return max(a, b) + g(a, b)\n\n\ndef g(a, b):\n    return a\n"
    swaps = [m for m in enumerate_mutations(source, "f") if m.kind == "swapped_argument"]
    assert [m.new_source.splitlines()[1] for m in swaps] == ["    return max(a, b) + g(b, a)"]


def test_unknown_function() -> None:
    with pytest.raises(MutationError, match="no top-level function 'nope'"):
        enumerate_mutations(SAMPLE, "nope")
