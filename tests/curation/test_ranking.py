"""Pass rates stored on problems, written as JSONL and read back by the loaders; the curriculum uses them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from coding_framework.config.training import CurriculumConfig
from coding_framework.curation import by_pass_rate, pass_rates, with_pass_rates
from coding_framework.problems import (
    ProblemLoadError,
    builtin_problems,
    load_benchmark,
    load_problem_records,
    write_problem_records,
)
from coding_framework.training.algos.schedule import ProblemSampler, rated_difficulty

CLI = [sys.executable, "-m", "coding_framework.cli"]


def test_pass_rates_count_samples_per_task() -> None:
    outcomes = [("a", True), ("a", False), ("b", False), ("a", True)]
    assert pass_rates(outcomes) == {"a": (2 / 3, 3), "b": (0.0, 1)}


def test_ranked_problems_round_trip_through_jsonl(tmp_path: Path) -> None:
    problems = builtin_problems()[:3]
    outcomes = [(problems[0].task_id, True), (problems[1].task_id, False), (problems[2].task_id, True)]
    outcomes.append((problems[2].task_id, False))
    ranked = with_pass_rates(problems, outcomes, "embedded")
    assert [(p.pass_rate, p.pass_rate_n, p.pass_rate_source) for p in ranked] == [
        (1.0, 1, "embedded"), (0.0, 1, "embedded"), (0.5, 2, "embedded"),
    ]  # fmt: skip
    path = write_problem_records(ranked, tmp_path / "ranked.jsonl")
    assert load_problem_records(path) == ranked
    assert load_benchmark("jsonl", path) == ranked
    assert [p.pass_rate for p in by_pass_rate([problems[0], *ranked])] == [1.0, 0.5, 0.0, None]
    with pytest.raises(ValueError, match="no graded samples"):
        with_pass_rates(problems, outcomes[:1], "embedded")


def test_bad_problem_records_name_the_file_and_line(tmp_path: Path) -> None:
    good = builtin_problems()[0].model_dump(mode="json")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(good) + "\n" + json.dumps({**good, "task_id": "x", "pass_rate": 2}) + "\n")
    with pytest.raises(ProblemLoadError, match=r"bad.jsonl:2: not a problem record: pass_rate"):
        load_problem_records(bad)
    bad.write_text(json.dumps(good) + "\n" + json.dumps(good) + "\n")
    with pytest.raises(ProblemLoadError, match=r"bad.jsonl:2: duplicate task_id"):
        load_problem_records(bad)
    with pytest.raises(ProblemLoadError, match="pass its path"):
        load_benchmark("jsonl")


def test_curriculum_by_pass_rate_weighs_the_measured_difficulty() -> None:
    easy_label = builtin_problems()[0].model_copy(update={"difficulty": "easy"})
    hard = easy_label.model_copy(update={"task_id": "t/hard", "pass_rate": 0.1})
    easy = easy_label.model_copy(update={"task_id": "t/easy", "difficulty": "hard", "pass_rate": 0.9})
    assert rated_difficulty(hard, by_pass_rate=False) == "easy"
    assert [rated_difficulty(p, True) for p in (hard, easy, easy_label)] == ["hard", "easy", "easy"]
    only_easy = {"easy": 1.0, "medium": 0.0, "hard": 0.0}
    curriculum = CurriculumConfig(enabled=True, start=only_easy, end=only_easy, by_pass_rate=True)
    sampler = ProblemSampler([hard, easy], seed=0, curriculum=curriculum)
    assert all(sampler.draw(step, 1)[0].task_id == "t/easy" for step in range(5))


@pytest.mark.slow
def test_rank_cli_with_the_embedded_model(tmp_path: Path) -> None:
    from coding_framework.embedded import ensure_embedded_model

    ensure_embedded_model(progress=False)  # a fresh machine builds it here, outside the CLI's time limit
    out = tmp_path / "ranked.jsonl"
    problems = tmp_path / "two.jsonl"
    write_problem_records(builtin_problems()[:2], problems)
    proc = subprocess.run(
        [*CLI, "data", "rank", "--benchmark", "jsonl", "--data", str(problems), "--model", "embedded",
         "-n", "1", "--out", str(out)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    ranked = load_benchmark("jsonl", out)
    assert [p.task_id for p in ranked] == [p.task_id for p in builtin_problems()[:2]]
    assert all(
        p.pass_rate in (0.0, 1.0) and p.pass_rate_n == 1 and p.pass_rate_source == "embedded" for p in ranked
    )
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["problems"] == 2 and Path(summary["plot"]).is_file()


def test_training_attaches_stored_pass_rates_by_task_id(tmp_path: Path) -> None:
    from coding_framework.config import ConfigError
    from coding_framework.training.run.setup import with_stored_pass_rates

    problems = builtin_problems()[:3]
    ranked = with_pass_rates(problems[:1], [(problems[0].task_id, True)], "local:/m")
    path = write_problem_records(ranked, tmp_path / "ranked.jsonl")
    out = with_stored_pass_rates(problems, path)
    assert (out[0].pass_rate, out[0].pass_rate_source, out[0].pass_rate_n) == (1.0, "local:/m", 1)
    assert out[1:] == problems[1:]
    with pytest.raises(ConfigError, match=r"data\.pass_rates: .*missing\.jsonl: no such file"):
        with_stored_pass_rates(problems, tmp_path / "missing.jsonl")


def test_passing_programs_join_the_reference_solutions_once() -> None:
    problem = builtin_problems()[0]
    ref = problem.solutions[0]
    outcomes = [(problem.task_id, True), (problem.task_id, True), (problem.task_id, False)]
    mine = "def f():\n    return 1\n"
    [ranked] = with_pass_rates([problem], outcomes, "m", {problem.task_id: [mine, ref, mine]})
    assert ranked.solutions == [*problem.solutions, mine] and ranked.solutions[0] == ref


def test_the_pass_rate_band_keeps_learnable_problems_and_counts_the_rest(tmp_path: Path) -> None:
    from coding_framework.config import ConfigError, load_config
    from coding_framework.config.training import TrainingConfig
    from coding_framework.training.run.data import prepare_data

    problems, held = builtin_problems()[:4], builtin_problems()[4:6]
    outcomes = [(problems[0].task_id, True), (problems[1].task_id, False),
                (problems[2].task_id, True), (problems[2].task_id, False)]  # fmt: skip
    ranked = write_problem_records(with_pass_rates(problems[:3], outcomes, "m"), tmp_path / "r.jsonl")
    source = write_problem_records(problems, tmp_path / "train.jsonl")
    heldout = write_problem_records(held, tmp_path / "held.jsonl")
    data = {"train": [str(source)], "heldout": str(heldout), "pass_rates": str(ranked),
            "pass_rate_band": [0.1, 0.9], "decontamination": {"against": []}}
    config = TrainingConfig.model_validate({"data": data, "eval": {"benchmarks": []}})
    prepared = prepare_data(config)
    assert [p.task_id for p in prepared.train] == [problems[2].task_id]
    assert prepared.manifest["pass_rate_band"] == {"band": [0.1, 0.9], "kept": 1, "below": 1, "above": 1,
                                                   "unranked": 1}
    assert prepared.warm_start is not None and len(prepared.warm_start) == 4
    bad = tmp_path / "bad.yaml"
    bad.write_text("data: {pass_rate_band: [0.1, 0.9]}\n")
    with pytest.raises(ConfigError, match="pass_rate_band needs pass_rates"):
        load_config(TrainingConfig, str(bad))
