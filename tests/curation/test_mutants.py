"""Mutation operators: one site each, deduplicated by text, compiling, capped deterministically."""

from __future__ import annotations

import ast

from coding_framework.curation import OPERATORS, mutants

PROGRAM = '''def f(xs: list[int] | None, k: int) -> bool:
    """Docstring 1 + 1 stays."""
    if not xs and k > 0:
        return True
    t = 0
    for x in xs:
        t += x * 2
    return t % 3 == 1
'''


def _changed_lines(mutant: str) -> list[tuple[str, str]]:
    old = ast.unparse(ast.parse(PROGRAM)).splitlines()
    new = mutant.splitlines()
    assert len(old) == len(new)
    return [(a, b) for a, b in zip(old, new, strict=True) if a != b]


def test_each_operator_finds_its_sites() -> None:
    found = {m.operator: [] for m in mutants([PROGRAM])}
    for m in mutants([PROGRAM]):
        found[m.operator].append(_changed_lines(m.program)[0][1].strip())
    assert set(found) == set(OPERATORS)
    assert (
        "t -= x * 2" in found["arith"]
        and "t += x / 2" in found["arith"]
        and "return t // 3 == 1" in found["arith"]
    )
    assert "if not xs and k >= 0:" in found["compare"] and "return t % 3 != 1" in found["compare"]
    assert "if not xs or k > 0:" in found["boolean"] and "if xs and k > 0:" in found["boolean"]
    assert {"t = 1", "t = -1", "return False", "if not xs and k > 1:"} <= set(found["constant"])
    assert found["return"] == ["return None", "return None"]


def test_every_mutant_changes_one_line_and_compiles() -> None:
    for m in mutants([PROGRAM]):
        assert len(_changed_lines(m.program)) == 1, m.detail
        compile(m.program, "<m>", "exec")


def test_docstrings_and_annotations_are_left_alone() -> None:
    for m in mutants([PROGRAM]):
        assert '"""Docstring 1 + 1 stays."""' in m.program
        assert "list[int] | None" in m.program and "-> bool" in m.program


def test_mutants_are_unique_by_text_across_references() -> None:
    same_twice = mutants([PROGRAM, PROGRAM])
    assert [m.program for m in same_twice] == [m.program for m in mutants([PROGRAM])]
    assert len({m.program for m in same_twice}) == len(same_twice)
    # A reference that only differs in formatting gives no mutant equal to the other reference.
    other = PROGRAM.replace("t += x * 2", "t = t + x * 2")
    programs = {ast.unparse(ast.parse(p)) for p in (PROGRAM, other)}
    assert not programs & {m.program for m in mutants([PROGRAM, other])}


def test_cap_is_a_deterministic_seeded_draw() -> None:
    everything = mutants([PROGRAM])
    capped = mutants([PROGRAM], cap=5, seed="a")
    assert len(capped) == 5 and capped == mutants([PROGRAM], cap=5, seed="a")
    assert [m for m in everything if m in capped] == capped  # site order kept
    assert capped != mutants([PROGRAM], cap=5, seed="b")


def test_unparsable_programs_give_no_mutants() -> None:
    assert mutants(["def f(:\n    pass\n"]) == []
    assert mutants(["x = 'no operators here'\n"]) == []
