"""Shared by the BigCodeBench tests: the fixture's paths and a skip marker for a missing execution env."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coding_framework.config.inprocess import InProcessConfig

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "bigcodebench"
DATA = FIXTURE / "BigCodeBench.jsonl"
SAMPLES = FIXTURE / "samples.jsonl"
COMPLETIONS = FIXTURE / "samples_completion.jsonl"

_venv = InProcessConfig().env_venv
needs_env = pytest.mark.skipif(
    not (Path(_venv) / "bin" / "python").exists(),
    reason=f"the BigCodeBench execution environment {_venv} is missing: "
    "bash scripts/setup_bigcodebench_env.sh (make test builds it)",
)

# What each fixture category must come out as: our status, and the official harness's.
EXPECTED = {
    "correct": ({"passed"}, "pass"),
    "wrong": ({"failed"}, "fail"),
    "timeout": ({"timeout"}, "timeout"),
    "crash": ({"crashed", "error"}, None),  # a dead process is "timeout" there, an import error "fail"
}


def sample_rows(path: Path = SAMPLES) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]
