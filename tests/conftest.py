from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"benchmark data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def humaneval_rows(shared_data: Path) -> list[dict]:
    with gzip.open(shared_data / "humaneval" / "HumanEval.jsonl.gz", "rt") as fh:
        return [json.loads(line) for line in fh]
