"""The `coding-framework evaluate` contract: results per sample in order, pass@k on the last stdout line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

CLI = [sys.executable, "-m", "coding_framework.cli"]


def run(*args, cwd=None):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=600, cwd=cwd)


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_humaneval_samples_contract(tmp_path, humaneval_rows):
    rows = []
    for r in humaneval_rows[:5]:
        rows += [
            {"task_id": r["task_id"], "completion": r["canonical_solution"]},
            {"task_id": r["task_id"], "completion": "    return None\n"},
        ]
    samples = write(tmp_path / "s.jsonl", rows)
    out = run(
        "evaluate",
        "--benchmark",
        "humaneval",
        "--samples",
        str(samples),
        "--results",
        str(tmp_path / "r.jsonl"),
        "--timeout",
        "5",
        "--workers",
        "2",
    )
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout.strip().splitlines()[-1])
    assert summary == {"pass@1": 0.5}
    results = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert [r["task_id"] for r in results] == [r["task_id"] for r in rows]
    assert [r["passed"] for r in results] == [True, False] * 5
    assert all(set(r) >= {"task_id", "completion", "passed", "result"} for r in results)
    assert results[0]["result"] == "passed" and results[1]["result"].startswith("failed")


def test_mbpp_samples_with_numeric_ids(tmp_path, shared_data):
    mbpp = [json.loads(line) for line in (shared_data / "mbpp" / "mbpp.jsonl").read_text().splitlines()][
        10:14
    ]
    rows = [{"task_id": r["task_id"], "completion": r["code"]} for r in mbpp] * 10
    samples = write(tmp_path / "s.jsonl", rows)
    out = run(
        "evaluate",
        "--benchmark",
        "mbpp",
        "--data",
        str(shared_data / "mbpp" / "mbpp.jsonl"),
        "--samples",
        str(samples),
        "--results",
        str(tmp_path / "r.jsonl"),
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"pass@1": 1.0, "pass@10": 1.0}
    results = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert [r["task_id"] for r in results] == [r["task_id"] for r in rows]  # MBPP's own (numeric) ids
    assert len(results) == 40


def test_samples_of_one_split_grade_against_that_split(tmp_path, shared_data):
    """`--benchmark mbpp:test` takes the same NAME:SPLIT with --samples as with --model."""
    mbpp = [json.loads(line) for line in (shared_data / "mbpp" / "mbpp.jsonl").read_text().splitlines()]
    test = [{"task_id": r["task_id"], "completion": r["code"]} for r in mbpp[10:12]]
    data = ["--benchmark", "mbpp:test", "--data", str(shared_data / "mbpp" / "mbpp.jsonl")]
    out = run("evaluate", *data, "--samples", str(write(tmp_path / "s.jsonl", test)),
              "--results", str(tmp_path / "r.jsonl"))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"pass@1": 1.0}
    train = [{"task_id": mbpp[700]["task_id"], "completion": mbpp[700]["code"]}]  # 601-974: train
    out = run("evaluate", *data, "--samples", str(write(tmp_path / "t.jsonl", train)))
    assert out.returncode == 2 and f"unknown task_id {mbpp[700]['task_id']!r}" in out.stderr, out.stderr


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"task_id": "HumanEval/0", "completion": "x"}\nnot json\n', "line 2: not valid JSON"),
        ('{"task_id": "HumanEval/0"}\n', "line 1: missing 'completion'"),
        ('{"task_id": "HumanEval/999", "completion": ""}\n', "line 1: unknown task_id 'HumanEval/999'"),
        ("[1, 2]\n", "line 1: expected a JSON object"),
        ("", "contains no samples"),
    ],
)
def test_malformed_samples_name_the_line_without_traceback(tmp_path, content, message):
    samples = tmp_path / "s.jsonl"
    samples.write_text(content)
    out = run(
        "evaluate", "--benchmark", "humaneval", "--samples", str(samples), "--results", str(tmp_path / "r")
    )
    assert out.returncode == 2
    assert message in out.stderr and "Traceback" not in out.stderr


def test_missing_file_and_bad_benchmark(tmp_path):
    out = run("evaluate", "--benchmark", "humaneval", "--samples", str(tmp_path / "nope.jsonl"))
    assert out.returncode == 2 and "samples file not found" in out.stderr
    out = run("evaluate", "--benchmark", "apps", "--canonical")
    assert out.returncode == 2 and "unknown benchmark" in out.stderr and "Traceback" not in out.stderr


def test_canonical_mode(tmp_path):
    out = run("evaluate", "--benchmark", "builtin", "--canonical", "--results", str(tmp_path / "r.jsonl"))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1])["pass@1"] == 1.0


@pytest.mark.slow
def test_a_model_evaluates_one_split_single_draft_with_a_line_per_episode(tmp_path, shared_data):
    """`--benchmark mbpp:test` asks MBPP's test split only; `--max-rounds 1 --temperature 0` is the standard
    greedy single draft; off a terminal every finished episode prints a progress line."""
    from coding_framework.testing.models import tiny_model_dir

    model = tiny_model_dir(tmp_path / "tiny")
    out = run("evaluate", "--benchmark", "mbpp:test", "--data", str(shared_data / "mbpp" / "mbpp.jsonl"),
              "--model", str(model), "--limit", "3", "--max-rounds", "1", "--temperature", "0",
              "--concurrency", "2", "--results", str(tmp_path / "r.jsonl"))
    assert out.returncode == 0, out.stderr[-2000:]
    line = json.loads(out.stdout.strip().splitlines()[-1])
    assert (line["benchmark"], line["problems"], line["mean_rounds"]) == ("mbpp:test", 3, 1.0)
    ids = [json.loads(r)["task_id"] for r in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert ids == ["Mbpp/11", "Mbpp/12", "Mbpp/13"]  # the test split starts at task 11
    progress = [ln for ln in out.stderr.splitlines() if ln.startswith("generated ")]
    assert len(progress) == 3 and progress[-1].startswith("generated 3/3: ")
    bad = run("evaluate", "--benchmark", "mbpp:nope", "--model", str(model))
    assert bad.returncode == 2 and "has no split 'nope'" in bad.stderr and "Traceback" not in bad.stderr
