"""The BigCodeBench loader: the release format, both splits, and one-line errors naming file and record."""

from __future__ import annotations

import gzip
import json

import pytest

from coding_framework.problems import ProblemLoadError, load_benchmark
from coding_framework.problems.bigcodebench import load_bigcodebench
from tests.sandbox.bigcodebench_env import DATA, FIXTURE


def _records():
    return [json.loads(line) for line in DATA.read_text().splitlines()]


def _write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_complete_split_from_file_and_folder():
    problems = load_benchmark("bigcodebench", DATA, "complete")
    assert [p.task_id for p in problems] == [f"BigCodeBench/{i}" for i in range(12)]
    assert load_benchmark("bigcodebench", FIXTURE, "all") == problems
    p = problems[1]
    assert p.test_format == "unittest" and p.entry_point == "task_func" and p.prompt_is_code
    assert p.prompt.startswith('import pandas as pd\ndef task_func(data):\n    """')
    assert p.code_prompt == "import pandas as pd\ndef task_func(data):"
    assert p.solutions == [p.prompt + _records()[1]["canonical_solution"]]
    assert p.tags == ["pandas"] and p.source == "bigcodebench"
    assert p.description.startswith("Build a DataFrame")


def test_instruct_split_and_gzip(tmp_path):
    gz = tmp_path / "BigCodeBench.jsonl.gz"
    gz.write_bytes(gzip.compress(DATA.read_bytes()))
    problems = load_bigcodebench(tmp_path, "instruct")
    assert len(problems) == 12
    assert not problems[0].prompt_is_code
    assert problems[0].prompt.startswith("Standardize a 1-D array")
    assert problems[0].prompt.endswith("```\nimport numpy as np\ndef task_func(arr):\n```")


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda r: r.pop("test"), "missing field 'test'"),
        (lambda r: r.update(libs="numpy"), "field 'libs' must be a list"),
        (lambda r: r.update(test="import unittest\n"), "defines no `TestCases` class"),
        (lambda r: r.update(complete_prompt="def task_func(:\n"), "complete_prompt of BigCodeBench/2 is not"),
        (lambda r: r.update(doc_struct="{not json"), "field 'doc_struct' is not valid JSON"),
        (lambda r: r.update(entry_point="task func"), "invalid problem BigCodeBench/2"),
    ],
)
def test_bad_record_names_file_and_line(tmp_path, mutate, message):
    records = _records()
    mutate(records[2])
    path = _write(tmp_path / "bcb.jsonl", records)
    with pytest.raises(ProblemLoadError, match=r"bcb\.jsonl:3") as err:
        load_bigcodebench(path)
    assert message in str(err.value)


def test_bad_files(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(DATA.read_text().splitlines()[0] + "\n{oops\n")
    with pytest.raises(ProblemLoadError, match=r"bad\.jsonl:2: invalid JSON"):
        load_bigcodebench(bad)
    _write(tmp_path / "dup.jsonl", _records()[:2] + _records()[:1])
    with pytest.raises(ProblemLoadError, match=r"dup\.jsonl:3: duplicate task_id 'BigCodeBench/0'"):
        load_bigcodebench(tmp_path / "dup.jsonl")
    with pytest.raises(ProblemLoadError, match=r"exactly one \.jsonl\(\.gz\) file, found 2"):
        load_bigcodebench(tmp_path)
    with pytest.raises(ProblemLoadError, match="no bundled copy"):
        load_benchmark("bigcodebench")
    with pytest.raises(ProblemLoadError, match="no split 'test'"):
        load_benchmark("bigcodebench", DATA, "test")
