"""CodeContests and EvalPlus loaders: official formats in, clear errors naming file and record out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coding_framework.problems import ProblemLoadError, load_benchmark
from coding_framework.sandbox.judge.calls import matches
from coding_framework.sandbox.judge.stdio import tokens_match

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_codecontests_fixture_loads_all_test_sets() -> None:
    problems = load_benchmark("codecontests", FIXTURES / "codecontests")
    assert [p.task_id for p in problems] == ["1_A. Sum of two", "2_B. Circle area", "3_C. Sort them"]
    spec = json.loads(problems[0].test_code)
    assert len(spec["tests"]) == 4 and spec["time_limit_s"] == 2.0  # public + private + generated
    assert problems[0].test_format == "stdio" and problems[0].timeout_s is not None


def test_codecontests_reads_the_hub_parquet_shards(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    rows = [
        json.loads(x)
        for x in (FIXTURES / "codecontests" / "code_contests_test.jsonl").read_text().splitlines()
    ]
    (tmp_path / "data").mkdir()
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "data" / "test-00000-of-00001.parquet")
    problems = load_benchmark("codecontests", tmp_path, "test")
    assert [p.task_id for p in problems] == [r["name"] for r in rows]
    with pytest.raises(ProblemLoadError, match="no CodeContests file found"):
        load_benchmark("codecontests", tmp_path, "train")


def test_codecontests_bad_record_names_file_and_line(tmp_path: Path) -> None:
    row = json.loads((FIXTURES / "codecontests" / "code_contests_test.jsonl").read_text().splitlines()[0])
    row["public_tests"] = {"input": ["1 2\n"], "output": []}
    bad = tmp_path / "code_contests_test.jsonl"
    bad.write_text(json.dumps(row) + "\n")
    with pytest.raises(ProblemLoadError, match=rf"{bad}:1: field 'public_tests' should be"):
        load_benchmark("codecontests", bad)
    with pytest.raises(ProblemLoadError, match="no split 'dev'"):
        load_benchmark("codecontests", bad, "dev")


def test_evalplus_loads_base_then_plus() -> None:
    problems = load_benchmark("humanevalplus", FIXTURES / "evalplus")
    first = problems[0]
    record = json.loads((FIXTURES / "evalplus" / "HumanEvalPlus.jsonl").read_text().splitlines()[0])
    assert first.test_format == "calls" and first.base_tests == len(record["base_input"])
    assert "'time_limits': [1.0" in first.test_code  # EvalPlus's minimum per-input limit


def test_evalplus_bad_record_names_file_and_line(tmp_path: Path) -> None:
    lines = (FIXTURES / "evalplus" / "MbppPlus.jsonl").read_text().splitlines()
    row = json.loads(lines[1])
    row["plus_input"] = [1, 2]
    bad = tmp_path / "MbppPlus.jsonl"
    bad.write_text(lines[0] + "\n" + json.dumps(row) + "\n")
    with pytest.raises(ProblemLoadError, match=rf"{bad}:2: field 'plus_input' should be a list of argument"):
        load_benchmark("mbppplus", bad)
    del row["atol"]
    bad.write_text(json.dumps(row) + "\n")
    with pytest.raises(ProblemLoadError, match=rf"{bad}:1: "):
        load_benchmark("mbppplus", bad)


@pytest.mark.parametrize(
    ("output", "expected", "tol", "ok"),
    [
        ("1 2\n3", "1  2 3\n", 0.0, True),
        ("1 2", "1 2 3", 0.0, False),
        ("3.1415927", "3.14159265", 1e-5, True),
        ("3.14", "3.14159265", 1e-5, False),
        ("1000000.5", "1000000.0", 1e-6, True),  # relative for large values
        ("YES", "yes", 1e-5, False),
        ("nan", "nan", 1e-5, True),
        ("inf", "1e308", 1e-5, False),
    ],
)
def test_tokens_match(output: str, expected: str, tol: float, ok: bool) -> None:
    assert tokens_match(output, expected, tol) is ok


@pytest.mark.parametrize(
    ("out", "exp", "atol", "oracle", "ok"),
    [
        (1.0, 1.0000001, 0, None, True),  # floats get atol 1e-6 even when the task's atol is 0
        (1.0, 1.01, 0, None, False),
        ([1.0, 2.0], [1.0, 2.0000001], 0, None, True),
        ((1.0,), [1.0], 1e-6, None, False),  # not equal, and the type check fails
        (1, True, 0, None, True),  # exact: 1 == True, as in EvalPlus
        ([3, 1], [1, 3], 0, "set_eq", True),
        ("x", True, 0, "not_none", True),
        (None, True, 0, "not_none", False),
    ],
)
def test_evalplus_matches(out: object, exp: object, atol: float, oracle: str | None, ok: bool) -> None:
    assert matches(out, exp, atol, oracle) is ok
