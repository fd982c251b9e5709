"""The `evaluate` contract on the CodeContests and EvalPlus fixtures: rows in input order, pass@k last."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from coding_framework.cli.main import app
from coding_framework.sandbox.cpp import compiler

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CC_EXPECTED = {
    "correct": True, "correct-cpp": True, "wrong": False, "wrong-cpp-overflow": False,
    "correct-within-tolerance": True, "wrong-float": False, "correct-other-whitespace": True,
    "timeout": False, "crash": False, "compile-error": False,
}  # fmt: skip


def _evaluate(tmp_path: Path, benchmark: str, data: Path, samples: Path) -> tuple[list[dict], dict]:
    results = tmp_path / "r.jsonl"
    args = ["evaluate", "--benchmark", benchmark, "--data", str(data), "--samples", str(samples)]
    out = CliRunner().invoke(app, [*args, "--results", str(results), "--workers", "2"])
    assert out.exit_code == 0, out.output
    return [json.loads(x) for x in results.read_text().splitlines()], json.loads(out.stdout.splitlines()[-1])


@pytest.mark.slow
@pytest.mark.skipif(compiler() is None, reason="no g++ on PATH for the C++ samples")
def test_codecontests_contract(tmp_path: Path) -> None:
    samples = FIXTURES / "codecontests" / "samples.jsonl"
    rows, summary = _evaluate(tmp_path, "codecontests", FIXTURES / "codecontests", samples)
    kinds = [json.loads(x)["kind"] for x in samples.read_text().splitlines()]
    assert [r["passed"] for r in rows] == [CC_EXPECTED[k] for k in kinds]
    by_kind = dict(zip(kinds, rows, strict=True))
    assert by_kind["timeout"]["status"] == "timeout"
    assert by_kind["compile-error"]["result"].startswith("failed: CompileError")
    assert summary["pass@1"] == pytest.approx((2 / 4 + 1 / 2 + 1 / 4) / 3)


@pytest.mark.slow
@pytest.mark.parametrize("benchmark", ["humanevalplus", "mbppplus"])
def test_evalplus_base_and_plus(tmp_path: Path, benchmark: str) -> None:
    samples = FIXTURES / "evalplus" / f"samples_{benchmark}.jsonl"
    rows, summary = _evaluate(tmp_path, benchmark, FIXTURES / "evalplus", samples)
    kinds = [json.loads(x)["kind"] for x in samples.read_text().splitlines()]
    for kind, row in zip(kinds, rows, strict=True):
        assert row["passed"] is (kind == "correct"), (kind, row)
        assert row["base_passed"] is (kind in ("correct", "base-only")), (kind, row)
    assert summary["plus"] == {"pass@1": summary["pass@1"]}
    assert summary["base"]["pass@1"] > summary["plus"]["pass@1"]
