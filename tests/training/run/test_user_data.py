"""Training on a user's own data: sources mixed by weight, a held-out share by task, decontamination (a
planted paraphrase of HumanEval is caught), the secrets scan, the manifest, the regression gate, and bad
input as one line with no run directory left behind."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from coding_framework.cli.main import app
from coding_framework.config import ConfigError, load_config
from coding_framework.config.training import GateConfig, TrainingConfig
from coding_framework.problems import (
    Problem,
    ProblemLoadError,
    builtin_problems,
    load_benchmark,
    load_humaneval,
    write_problem_records,
)
from coding_framework.problems.sources import load_source, parse_source
from coding_framework.testing.tiny_run import tiny_config
from coding_framework.training.run.data import prepare_data
from coding_framework.training.run.gate import compare, gate_verdict, regression_gate
from coding_framework.training.run.heldout import HeldoutResult
from tests.sandbox.bigcodebench_env import DATA as BIGCODEBENCH

ROOT = Path(__file__).resolve().parents[3]
SECRET = 'API_TOKEN = "ghp_1234567890abcdefghijklmnopqrstuvwxyzAB"'


def paraphrase(problem: Problem, i: int) -> Problem:
    """A HumanEval problem as a leak would hide it: the function renamed, the first sentence reworded."""
    new = f"solve_task_{i}"
    prompt = problem.prompt.replace(problem.entry_point, new)
    first = re.search(r'("""|\'\'\')\s*([^\n]+?)(?:[.!?]|\n)', prompt)
    assert first is not None
    prompt = prompt[: first.start(2)] + "Here is what the function should do." + prompt[first.end(2) :]
    return problem.model_copy(update={
        "task_id": f"mine/{i}", "prompt": prompt, "entry_point": new, "description": "", "source": "mine",
        "solutions": [s.replace(problem.entry_point, new) for s in problem.solutions],
        "test_code": problem.test_code.replace(problem.entry_point, new),
    })


@pytest.fixture(scope="module")
def user_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built-in problems, 5 planted HumanEval paraphrases and one problem whose solution holds a token."""
    leaks = [paraphrase(p, i) for i, p in enumerate(load_humaneval(None)[10:15])]
    builtin = builtin_problems()
    secret = builtin[0].model_copy(update={"task_id": "mine/secret",
                                           "solutions": [f"{SECRET}\n{builtin[0].solutions[0]}"]})
    path = tmp_path_factory.mktemp("data") / "mine.jsonl"
    return write_problem_records([*builtin[1:], *leaks, secret], path)


def _config(tmp_path: Path, **data: object) -> TrainingConfig:
    """Decontamination by text only: the behaviour check (tests/training/run/test_behaviour_drops.py) grades
    thousands of pairs here and drops built-ins that are HumanEval or MBPP-test problems (is_prime is
    HumanEval/31)."""
    overrides = {"data.decontamination.behaviour": False, **{f"data.{k}": v for k, v in data.items()}}
    return load_config(TrainingConfig, tiny_config(tmp_path), overrides=overrides)


def test_sources_are_parsed_once_and_fail_in_one_line(tmp_path: Path) -> None:
    assert (parse_source("mbpp:train").name, parse_source("mbpp:train").split) == ("mbpp", "train")
    assert parse_source("builtin").split == "all"
    with pytest.raises(ProblemLoadError, match=r"unknown problem source 'nope'.*benchmarks: .*humaneval"):
        parse_source("nope")
    with pytest.raises(ProblemLoadError, match="no such file"):
        parse_source(str(tmp_path / "missing.jsonl"))
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(builtin_problems()[0].model_dump(mode="json")) + '\n{"task_id": "x"}\n')
    with pytest.raises(ProblemLoadError, match=r"bad\.jsonl:2"):
        load_source(str(bad))
    with pytest.raises(ProblemLoadError, match="has no split"):
        load_source("synthetic:nope")


def test_a_small_file_caps_the_batch_at_its_training_problems(tmp_path: Path) -> None:
    """12 problems, a quarter held out: a 12-problem step is capped at the 9 left; the manifest says so."""
    path = write_problem_records(builtin_problems()[:12], tmp_path / "own.jsonl")
    config = _config(tmp_path, train=[str(path)], heldout_fraction=0.25)
    config.rollout.problems_per_step = 12
    data = prepare_data(config)
    assert len(data.train) == 9 and data.problems_per_step == 9
    assert data.manifest["batch"] == {"requested_problems_per_step": 12, "problems_per_step": 9,
                                      "capped": True}
    config.rollout.problems_per_step = 4
    assert prepare_data(config).manifest["batch"]["capped"] is False


def test_a_users_file_is_held_out_by_task_decontaminated_and_recorded(user_file: Path,
                                                                      tmp_path: Path) -> None:
    data = prepare_data(_config(tmp_path, train=[str(user_file)], heldout="synthetic:heldout"))
    manifest = data.manifest
    dropped = {row["task_id"]: row for row in manifest["dropped"]}
    # Every planted paraphrase is caught, with what it matched; the token is caught; nothing else is.
    leaks = [f"mine/{i}" for i in range(5)]
    assert sorted(t for t, r in dropped.items() if r["reason"] == "contaminated") == leaks
    assert {dropped[t]["match"]["task_id"] for t in leaks} == {f"HumanEval/{i}" for i in range(10, 15)}
    assert all(dropped[f"mine/{i}"]["match"]["overlap"] >= 0.7 for i in range(5))
    assert dropped["mine/secret"] == {"task_id": "mine/secret", "source": "builtin", "reason": "secret",
                                      "kind": "secret", "match": {"kinds": ["GitHub Token"]}}
    by_kind = Counter(row["kind"] for row in manifest["dropped"])
    assert manifest["dropped_by_kind"] == dict(sorted(by_kind.items())) and by_kind["secret"] == 1
    assert set(by_kind) <= {"exact", "paraphrase", "behaviour", "secret"}
    kept = len(builtin_problems()) - 1  # the file's built-ins (one became the secret's carrier)
    assert manifest["train"]["count"] == len(data.train) == kept
    assert manifest["train"]["sources"] == [{"source": str(user_file), "count": kept}]
    assert manifest["heldout"]["sources"] == [{"source": "synthetic:heldout", "count": len(data.heldout)}]
    assert "humaneval" in manifest["checked_against"]
    # Without a named held-out source, a seeded share of the tasks is held out and never trained on.
    shared = prepare_data(_config(tmp_path, train=["builtin"], heldout_fraction=0.2, heldout_limit=1000))
    train, heldout = {p.task_id for p in shared.train}, {p.task_id for p in shared.heldout}
    assert not train & heldout and len(heldout) == round(0.2 * len(builtin_problems()))
    again = prepare_data(_config(tmp_path, train=["builtin"], heldout_fraction=0.2, heldout_limit=1000))
    assert again.sha256 == shared.sha256
    with pytest.raises(ConfigError, match="5 training problems are contaminated"):
        prepare_data(_config(tmp_path, train=[str(user_file)], heldout="synthetic:heldout",
                             decontamination={"on_contamination": "error", "scan_secrets": False,
                                              "behaviour": False}))
    with pytest.raises(ConfigError, match="evaluation set 'heldout' overlaps the training set"):
        prepare_data(_config(tmp_path, train=[str(user_file)], heldout=str(user_file)))
    weighted = prepare_data(_config(tmp_path, train=["builtin", {"source": "synthetic:train", "weight": 3}],
                                    heldout="synthetic:heldout"))
    assert weighted.weights is not None and set(weighted.weights) == {1.0, 3.0}


def test_unittest_problems_are_trained_on_only_with_the_opt_in_the_refusal_names(tmp_path: Path) -> None:
    in_process = load_benchmark("bigcodebench", BIGCODEBENCH)[0]
    records = str(write_problem_records([in_process, *builtin_problems()[:2]], tmp_path / "mixed.jsonl"))
    with pytest.raises(ConfigError, match=re.escape(repr(in_process.task_id))) as err:
        prepare_data(_config(tmp_path, train=[records], heldout="synthetic:heldout"))
    named = re.search(r"set (\S+): true", str(err.value))
    assert named is not None, str(err.value)
    config = load_config(TrainingConfig, tiny_config(tmp_path), overrides={
        "data.train": [records], "data.heldout": "synthetic:heldout", named.group(1): True})
    assert in_process.task_id in {p.task_id for p in prepare_data(config).train}


def test_the_gate_fails_a_significant_fall_or_a_large_drop_and_passes_a_rise() -> None:
    tasks = [f"t{i}" for i in range(10)]
    before = dict.fromkeys(tasks, 1.0)

    def after(falls: int) -> dict[str, float]:
        return {t: 0.0 if i < falls else 1.0 for i, t in enumerate(tasks)}

    gate = GateConfig(alpha=0.05, max_drop=0.5)
    fell = compare("heldout", before, after(5), gate)
    assert not fell.passed and fell.fell == 5 and fell.p_value == pytest.approx(0.5**5)
    assert "alpha" in fell.reason
    assert compare("heldout", before, after(4), gate).passed  # p = 1/16, not significant at 0.05
    strict_drop = GateConfig(alpha=0.001, max_drop=0.2)
    assert compare("heldout", before, after(2), strict_drop).passed
    big = compare("heldout", before, after(3), strict_drop)
    assert not big.passed and "max_drop" in big.reason
    rose = regression_gate({"heldout": dict.fromkeys(tasks, 0.0)}, {"heldout": before}, gate)
    assert rose.passed and rose.after == {"heldout": 1.0}


def test_the_gates_verdict_on_a_run_is_the_same_for_both_trainers() -> None:
    """``gate_verdict``: what the local trainer and verl-train both call on their before/after results."""
    tasks = [f"t{i}" for i in range(6)]

    def result(rate: float) -> HeldoutResult:
        return HeldoutResult(pass_at_1=rate, problems=6, by_family={}, seconds=0.0,
                             by_task=dict.fromkeys(tasks, rate))

    gate = GateConfig(alpha=0.05, max_drop=0.1)
    verdict = gate_verdict(gate, result(1.0), {}, result(0.0), {})
    assert not verdict.passed and verdict.before == {"heldout": 1.0}
    assert gate_verdict(GateConfig(enabled=False), result(1.0), {}, result(0.0), {}).reason == "gate disabled"
    assert gate_verdict(gate, None, {}, result(0.0), {}).passed  # nothing measured before
    with pytest.raises(ConfigError, match=r"gate.benchmarks \['mbpp'\] are not eval.benchmarks sources"):
        gate_verdict(GateConfig(benchmarks=["mbpp"]), result(1.0), {}, result(1.0), {})


def test_data_decontaminate_writes_the_kept_problems_and_a_report(user_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "clean.jsonl"
    done = CliRunner().invoke(app, ["data", "decontaminate", "--data", str(user_file),
                                    "--against", "humaneval", "--out", str(out), "--no-behaviour"])
    assert done.exit_code == 0, done.output
    kept = len(builtin_problems()) - 1
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"kept": kept, "dropped": 6}
    report = json.loads((tmp_path / "clean.report.json").read_text())
    assert {row["reason"] for row in report["dropped"]} == {"contaminated", "secret"}
    assert sum(report["dropped_by_kind"].values()) == 6 and report["dropped_by_kind"]["secret"] == 1
    assert len(out.read_text().splitlines()) == kept


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "coding_framework.cli", *args], cwd=ROOT, text=True,
                          env=env, capture_output=True, timeout=300)


@pytest.mark.slow
@pytest.mark.parametrize(
    "flags,why",
    [
        (["--train-data", "nope:x"], "unknown problem source 'nope:x'"),
        (["--train-data", "BAD"], r"bad\.jsonl:1: not a problem record"),
        (["--train-data", "builtin", "--eval", "builtin"], "evaluation set 'builtin' overlaps"),
        (["--train-data", "humaneval"], "the training set is empty after cleaning"),
    ],
)
def test_bad_training_data_is_one_line_and_leaves_no_run_directory(flags: list[str], why: str,
                                                                    tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task_id": 1}\n')
    run = tmp_path / "run"
    done = _cli("train", "--config", str(tiny_config(tmp_path)), "--run-dir", str(run),
                *[str(bad) if f == "BAD" else f for f in flags])
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and re.search(why, lines[0]), lines
    assert not run.exists()
