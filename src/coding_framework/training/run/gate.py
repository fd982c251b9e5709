"""The regression gate: whether a trained model may be registered as ``challenger``.

On each gate set (the held-out set, plus the benchmark slices ``gate.benchmarks`` names), the per-problem
pass rates of the starting model and the final one are compared with a one-sided paired sign test: among
the problems whose rate changed, how likely as many falls as observed (or more) are if a fall and a rise
were equally likely (binomial, p = 1/2). The gate fails on a set whose fall is significant at ``alpha``, or
whose pass@1 dropped by more than ``max_drop``; a pass@1 that rose never fails it.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel
from scipy.stats import binomtest

from coding_framework.config.errors import ConfigError
from coding_framework.config.training import GateConfig
from coding_framework.models.registry import GATE_PASSED_TAG, GATE_REASON_TAG
from coding_framework.training.run.heldout import HeldoutResult

__all__ = ["GateResult", "SetComparison", "compare", "gate_verdict", "regression_gate"]


class SetComparison(BaseModel):
    """One gate set: pass@1 before and after, the problems that fell and rose, and the sign test's p."""

    before: float
    after: float
    problems: int
    fell: int
    rose: int
    p_value: float
    passed: bool
    reason: str


class GateResult(BaseModel):
    """``passed``: every set passed. ``before``/``after``: pass@1 per set; ``reason`` says why in one line."""

    passed: bool
    before: dict[str, float]
    after: dict[str, float]
    reason: str
    sets: dict[str, SetComparison]

    def summary(self) -> dict[str, object]:
        return {"passed": self.passed, "before": self.before, "after": self.after, "reason": self.reason}

    def tags(self) -> dict[str, str]:
        """What a registered version carries about its gate (``gate.passed``, ``gate.reason``, ...)."""
        out = {GATE_PASSED_TAG: str(self.passed).lower(), GATE_REASON_TAG: self.reason[:5000]}
        for name, s in self.sets.items():
            out[f"gate.{name}.before"] = f"{s.before:.4f}"
            out[f"gate.{name}.after"] = f"{s.after:.4f}"
            out[f"gate.{name}.p_value"] = f"{s.p_value:.4g}"
        return out


def compare(name: str, before: Mapping[str, float], after: Mapping[str, float],
            config: GateConfig) -> SetComparison:
    """The sign test and the drop check on one set; ``before``/``after``: task_id -> pass rate."""
    tasks = sorted(set(before) & set(after))
    if not tasks:
        return SetComparison(before=0.0, after=0.0, problems=0, fell=0, rose=0, p_value=1.0, passed=True,
                             reason=f"{name}: no problem measured both before and after")
    was = sum(before[t] for t in tasks) / len(tasks)
    now = sum(after[t] for t in tasks) / len(tasks)
    fell = sum(after[t] < before[t] for t in tasks)
    rose = sum(after[t] > before[t] for t in tasks)
    p = float(binomtest(fell, fell + rose, 0.5, alternative="greater").pvalue) if fell + rose else 1.0
    drop = was - now
    if drop > 0 and p < config.alpha:
        why = f"{name}: pass@1 fell {was:.3f} -> {now:.3f} ({fell} problems fell, {rose} rose; p={p:.3g} " \
              f"< alpha {config.alpha})"
        passed = False
    elif drop > config.max_drop:
        why = f"{name}: pass@1 fell {was:.3f} -> {now:.3f}, more than max_drop {config.max_drop}"
        passed = False
    else:
        why = f"{name}: pass@1 {was:.3f} -> {now:.3f} ({fell} fell, {rose} rose; p={p:.3g})"
        passed = True
    return SetComparison(before=was, after=now, problems=len(tasks), fell=fell, rose=rose, p_value=p,
                         passed=passed, reason=why)


def regression_gate(before: Mapping[str, Mapping[str, float]], after: Mapping[str, Mapping[str, float]],
                    config: GateConfig) -> GateResult:
    """The gate over every set measured before and after (set name -> task_id -> pass rate)."""
    sets = {name: compare(name, before[name], after[name], config) for name in before if name in after}
    failed = [s.reason for s in sets.values() if not s.passed]
    reason = "; ".join(failed) if failed else "; ".join(s.reason for s in sets.values()) or "nothing measured"
    return GateResult(passed=not failed, before={k: s.before for k, s in sets.items()},
                      after={k: s.after for k, s in sets.items()}, reason=reason, sets=sets)


def gate_verdict(config: GateConfig, baseline: HeldoutResult | None,
                 baseline_slices: Mapping[str, HeldoutResult], final: HeldoutResult,
                 final_slices: Mapping[str, HeldoutResult]) -> GateResult:
    """The gate over a run's held-out set and its gated slices (``config.benchmarks``), before vs after;
    disabled (or nothing measured before) it passes."""
    if not config.enabled or baseline is None:
        return GateResult(passed=True, before={}, after={}, sets={}, reason="gate disabled")
    unknown = sorted(set(config.benchmarks) - set(final_slices))
    if unknown:
        raise ConfigError(f"gate.benchmarks {unknown} are not eval.benchmarks sources")
    before = {"heldout": baseline.by_task, **{k: baseline_slices[k].by_task for k in config.benchmarks}}
    after = {"heldout": final.by_task, **{k: final_slices[k].by_task for k in config.benchmarks}}
    return regression_gate(before, after, config)
