"""The paired comparison behind "did the model learn": exact tests on the problems that changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.training.paired_learning import (
    _comparisons,
    _pooled,
    _run_record,
    _versus_arms,
    one_seed_power,
    paired,
    plot_rewards,
)
from coding_framework.training.run.results import StepRecord, TrainingResults


def test_greedy_pairs_are_mcnemars_exact_test() -> None:
    before = {f"t{i}": 0.0 for i in range(40)}
    after = {**before, **{f"t{i}": 1.0 for i in range(10)}}
    result = paired(before, after)
    assert (result["improved"], result["worsened"], result["problems"]) == (10, 0, 40)
    assert result["p_value"] == pytest.approx(2 * 0.5**10)
    assert result["mean_change"] == pytest.approx(0.25) and result["ci95"][0] > 0


def test_sampled_shares_use_the_sign_of_each_change_and_leave_ties_out() -> None:
    before = {"a": 0.25, "b": 0.5, "c": 0.0, "d": 1.0}
    after = {"a": 0.5, "b": 0.25, "c": 0.0, "d": 1.0, "extra": 1.0}
    result = paired(before, after)
    assert (result["improved"], result["worsened"], result["problems"]) == (1, 1, 4)
    assert result["p_value"] == 1.0 and result["mean_change"] == 0.0
    assert paired({"a": 0.0}, {"a": 0.0})["p_value"] == 1.0


def test_an_rl_runs_record_reads_the_trainers_results_file(tmp_path: Path) -> None:
    history = [StepRecord(step=s, metrics={"reward_mean": r, "pass_rate": r / 2, "flat_group_share": f,
                                           "seconds/step": 60.0, "rollout/request_failed": 0.0,
                                           "generated_tokens": 64.0 * s, "episodes": 2.0})
               for s, (r, f) in enumerate([(0.1, 0.75), (0.3, 0.25)], start=1)]
    results = TrainingResults(algorithm="grpo", seed=1, steps=2, run_dir=tmp_path, final_metrics={},
                              history=history, baseline_pass_at_1=0.1, heldout_pass_at_1=0.2,
                              heldout_problems=90, seconds=130.0, audit={"offending_tokens": 0.0})
    (tmp_path / "results.json").write_text(results.model_dump_json())
    (tmp_path / "data_manifest.json").write_text(json.dumps({"train": {"count": 319}}))
    record = _run_record(tmp_path)
    rl = record["rl"]
    assert rl["steps"] == 2 and rl["audit"] == {"offending_tokens": 0.0}
    assert rl["per_step"]["reward_mean"] == [0.1, 0.3] and rl["per_step"]["flat_group_share"] == [0.75, 0.25]
    assert rl["per_step"]["tokens_per_sample"] == [32.0, 64.0]
    assert rl["heldout_pass@1"] == {"before": 0.1, "after": 0.2, "problems": 90}
    png = plot_rewards({"grpo_seed1": record}, tmp_path / "curves.png")
    assert png is not None and png.read_bytes()[:4] == b"\x89PNG"
    assert plot_rewards({"warm_start": {**record, "rl": None}}, tmp_path / "none.png") is None


def test_versus_compares_the_arms_after_the_reference_or_those_it_lists() -> None:
    arms = ["base", "warm0", "rl0", "warm1", "rl1"]
    assert _versus_arms(["warm0", "warm1=rl1"], arms) == {"warm0": ["rl0", "warm1", "rl1"], "warm1": ["rl1"]}
    cells = {f"{arm}/mbpp:test/greedy": {"per_task": {"a": a, "b": b}}
             for arm, a, b in [("base", 0.0, 0.0), ("warm1", 1.0, 0.0), ("rl1", 1.0, 1.0)]}
    versus_warm = _comparisons(cells, ["rl1"], "warm1", ["mbpp:test"], ["greedy"])
    assert list(versus_warm) == ["rl1/mbpp:test/greedy"]
    rl = versus_warm["rl1/mbpp:test/greedy"]
    assert (rl["improved"], rl["worsened"]) == (1, 0)


def test_pooled_seeds_average_each_problem_over_the_arms() -> None:
    cells = {f"{arm}/mbpp:test/greedy": {"per_task": {"a": a, "b": b, "c": c}}
             for arm, a, b, c in [("seed0", 1.0, 0.0, 1.0), ("seed1", 1.0, 1.0, 0.0)]}
    pooled = _pooled(cells, ["seed0", "seed1"], ["mbpp:test"], ["greedy"])
    assert pooled == {"mbpp:test/greedy": {"a": 1.0, "b": 0.5, "c": 0.5}}
    result = paired({"a": 0.0, "b": 0.0, "c": 1.0}, pooled["mbpp:test/greedy"])
    assert (result["improved"], result["worsened"]) == (2, 1)


def test_one_seed_power_grows_with_the_effect_and_matches_the_test() -> None:
    # 10 changed verdicts, all rising: p = 0.002 -> nearly always significant when every change rises
    assert one_seed_power(10, 1.0) > 0.5
    assert one_seed_power(10, 0.5) < 0.05  # no effect: at most alpha / 2 in the direction of a gain
    assert one_seed_power(40, 0.6) < one_seed_power(40, 0.7) < one_seed_power(80, 0.7)
