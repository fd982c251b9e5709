"""`coding-framework data`: stats, filter and augment write what the loaders read; bad input exits 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from coding_framework.cli import app
from coding_framework.problems import builtin_problems, load_benchmark, write_problem_records

CLI = [sys.executable, "-m", "coding_framework.cli", "data"]


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["data", *args])
    return result.exit_code, result.output


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("stats", "--benchmark", "nope"), "unknown benchmark 'nope'"),
        (("stats", "--benchmark", "jsonl", "--data", "/no/such.jsonl"), "/no/such.jsonl: no such file"),
        (("stats", "--benchmark", "builtin", "--benchmark", "synthetic", "--data", "x"), "one --data per"),
        (("filter", "--benchmark", "builtin", "--split", "train", "--out", "o.jsonl"), "no split 'train'"),
        (("stats", "--benchmark", "mbpp:train", "--split", "test"), "names split 'train' and --split"),
        (
            ("augment", "--benchmark", "builtin", "--kinds", "rotate", "--out", "o.jsonl"),
            "unknown augmentation",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: tuple[str, ...], message: str) -> None:
    code, output = _invoke(*args)
    lines = output.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], output


def test_stats_counts_each_dataset() -> None:
    code, output = _invoke("stats", "--benchmark", "builtin", "--benchmark", "synthetic")
    assert code == 0, output
    summary = json.loads(output.strip().splitlines()[-1])
    assert summary["builtin"]["problems"] == len(builtin_problems())
    assert summary["builtin"]["tests"]["min"] >= 4 and summary["synthetic"]["ranked"] == 0


def test_a_split_named_on_the_benchmark_is_the_split(shared_data: Path) -> None:
    mbpp = str(shared_data / "mbpp" / "mbpp.jsonl")
    code, output = _invoke("stats", "--benchmark", "mbpp:train", "--data", mbpp)
    assert code == 0, output
    summary = json.loads(output.strip().splitlines()[-1])
    assert summary["mbpp:train"]["problems"] == len(load_benchmark("mbpp", mbpp, "train")) == 374


def test_augment_writes_records_the_loader_reads(tmp_path: Path) -> None:
    out = tmp_path / "aug.jsonl"
    code, output = _invoke("augment", "--benchmark", "builtin", "--seed", "3", "--out", str(out))
    assert code == 0, output
    problems = load_benchmark("jsonl", out)
    n = len(builtin_problems())
    assert len(problems) == 2 * n
    assert all(p.lineage == q.task_id for p, q in zip(problems[n:], problems[:n], strict=True))


@pytest.mark.slow
def test_filter_stores_kill_rates_and_plots(tmp_path: Path) -> None:
    source = write_problem_records(builtin_problems()[:3], tmp_path / "three.jsonl")
    out = tmp_path / "filtered.jsonl"
    proc = _run("filter", "--benchmark", "jsonl", "--data", str(source), "--out", str(out), "--cap", "5",
                "--workers", "2", "--min-kill-rate", "1.0", "--drop")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    kept = load_benchmark("jsonl", out)
    assert summary["measured"] == 3 and summary["mutants"] <= 15
    assert {p.task_id for p in kept} == {p.task_id for p in builtin_problems()[:3]} - set(summary["flagged"])
    assert all(p.kill_rate == 1.0 and 0 < p.mutants <= 5 for p in kept)
    assert out.with_suffix(".png").is_file()
