"""The phase table of benchmarks/training/real_model_speed.py: every second of a step lands in one phase."""

from __future__ import annotations

import pytest

from benchmarks.training.real_model_speed import PHASES, phase_table, phases

NOW = {  # a step as this checkout's trainer logs it
    "seconds/rollout": 40.0, "seconds/generate": 36.0, "seconds/reward": 1.5, "seconds/audit": 3.0,
    "seconds/behaviour_forward": 0.0, "seconds/prepare": 0.5, "seconds/forward_backward": 10.0,
    "seconds/optimizer": 0.2, "seconds/update": 11.0, "seconds/sync": 0.4, "seconds/step": 56.0,
    "seconds/log": 0.1, "seconds/checkpoint": 2.0, "async/idle_s": 36.0,
}
BEFORE = {k: NOW[k] for k in ("seconds/rollout", "seconds/generate", "seconds/reward", "seconds/update",
                              "seconds/sync", "seconds/step")}  # an earlier commit timed fewer phases


@pytest.mark.parametrize("step", [NOW, BEFORE])
def test_the_phases_add_up_to_the_step(step: dict[str, float]) -> None:
    found = phases([step, step])
    assert found["step"] == pytest.approx(step["seconds/step"] + step.get("seconds/log", 0.0)
                                          + step.get("seconds/checkpoint", 0.0))
    assert sum(found[k] for k in PHASES) == pytest.approx(found["step"], abs=0.05)
    assert (found["rollout"], found["generate"]) == (40.0, 36.0)


def test_untimed_phases_fall_into_other() -> None:
    now, before = phases([NOW]), phases([BEFORE])
    assert now["update_other"] == pytest.approx(0.3) and before["update_other"] == pytest.approx(11.0)
    assert before["other"] == pytest.approx(now["other"] + 3.0)  # the audit was not timed before
    table = phase_table({"before": {"phases": before, "samples_per_s": 0.1},
                         "now": {"phases": now, "samples_per_s": 0.4}})
    assert "| audit | 0.0 | 3.0 |" in table and "| samples/s | 0.100 | 0.400 |" in table
