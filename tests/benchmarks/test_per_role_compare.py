"""The comparison's arms differ only in roles and weights, and its summary is mean +- sd per arm."""

from __future__ import annotations

import pytest

from benchmarks.training.per_role_compare import arm_config, summarize, table


def test_the_shared_arm_is_todays_setup_on_the_budget() -> None:
    cfg = arm_config("shared", seed=2, tiny=False, warm_start=True, baseline=True)
    assert cfg.seed == 2 and cfg.rollout.trained_roles == ["generator"]
    assert cfg.workflow.agents.reviewer.backend == "llm" and cfg.workflow.graph.review == "on_failure"
    assert (cfg.workflow.graph.max_rounds, cfg.eval.max_rounds) == (2, 2)  # pass@1 after review + revision
    assert not cfg.reviewer_warm_start.enabled and cfg.tracking.registered_model is None
    tiny = arm_config("shared", seed=0, tiny=True, warm_start=True, baseline=False)
    assert tiny.steps < cfg.steps and not tiny.eval.baseline


def test_the_summary_is_mean_and_sd_per_arm() -> None:
    rows = [
        {"arm": "shared", "seed": s, "baseline_pass@1": 0.1, "pass@1": p, "baseline_usefulness": 0.2,
         "usefulness": u, "seconds": 100.0}
        for s, p, u in ((0, 0.2, None), (1, 0.4, 0.5))
    ]
    summary = summarize(rows)["shared"]
    assert summary["pass@1"]["mean"] == pytest.approx(0.3)
    assert summary["pass@1"]["sd"] == pytest.approx(0.1414, 1e-3)
    assert summary["usefulness"] == {"mean": 0.5, "sd": 0.0}  # a seed without judged reviews is left out
    assert "| shared | 0.100 +- 0.000 | 0.300 +- 0.141 |" in table(summarize(rows))
