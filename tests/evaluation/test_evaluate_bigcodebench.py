"""`coding-framework evaluate --benchmark bigcodebench`: official samples format, one result per sample."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.sandbox.bigcodebench_env import COMPLETIONS, DATA, EXPECTED, SAMPLES, needs_env, sample_rows

pytestmark = [needs_env, pytest.mark.slow]


def _evaluate(tmp_path, samples):
    config = tmp_path / "sandbox.yaml"
    config.write_text(
        "workers: 2\ninprocess:\n  timeout_s: 3\n  workers: 2\n  memory_mb: 4096\n  data_mb: 4096\n"
    )
    results = tmp_path / "r.jsonl"
    cmd = [sys.executable, "-m", "coding_framework.cli", "evaluate", "--benchmark", "bigcodebench"]
    cmd += ["--data", str(DATA), "--samples", str(samples), "--results", str(results)]
    out = subprocess.run([*cmd, "--sandbox-config", str(config)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    return json.loads(out.stdout.strip().splitlines()[-1]), rows


def test_solution_samples(tmp_path):
    summary, rows = _evaluate(tmp_path, SAMPLES)
    samples = sample_rows()
    assert [r["task_id"] for r in rows] == [s["task_id"] for s in samples]
    for sample, row in zip(samples, rows, strict=True):
        assert row["solution"] == sample["solution"]
        assert row["status"] in EXPECTED[sample["category"]][0], row
        assert row["passed"] == (sample["category"] == "correct")
        assert row["tier"] == "in_process"
    by_task: dict[str, list[bool]] = {}
    for s in samples:
        by_task.setdefault(s["task_id"], []).append(s["category"] == "correct")
    assert summary["pass@1"] == pytest.approx(sum(sum(v) / len(v) for v in by_task.values()) / len(by_task))


def test_completion_samples(tmp_path):
    summary, rows = _evaluate(tmp_path, COMPLETIONS)
    assert summary == {"pass@1": 1.0}
    assert all(r["passed"] and "completion" in r for r in rows)
