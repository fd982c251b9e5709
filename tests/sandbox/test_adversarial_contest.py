"""The adversarial corpus in the CodeContests (stdin/stdout) and HumanEval+ (calls) formats: all fail."""

from __future__ import annotations

import pytest

from benchmarks.grading.adversarial_corpus import ATTACKS
from benchmarks.grading.contest_hack_corpus import run


@pytest.mark.slow
def test_every_attack_fails_in_both_formats() -> None:
    report = run(workers=2)
    for fmt in ("codecontests", "humanevalplus"):
        rows = report[fmt]
        assert len(rows) == len(ATTACKS)
        assert [r["attack"] for r in rows if r["passed"] != r["correct_program"]] == [], fmt
        assert {r["tier"] for r in rows} == {"hardened"}
    assert report["sentinel_alive"] and report["host_dir_untouched"]
