"""Rollout statistics: A/A false-positive rate under continuous peeking, power, and rollback speed.

Reproduce:
    .venv/bin/python -m benchmarks.serving.stats --experiments 2000 --observations 2000 --rollouts 200

1. A/A: ``--experiments`` simulated experiments per setting (champion and candidate share one pass rate;
   the candidate gets ``share`` of the graded requests), each looked at after EVERY observation up to
   ``--observations``. A false positive is an experiment whose test ever declares a difference. Ours is
   `serving.rollouts.stats.confidence_sequence` (the mSPRT interval, called as the server calls it), beside a
   naive Welch t-test at 5% run at the same peeks: the anchor for what peeking does to a fixed-n test.
2. Power: `serving.rollouts.stats.samples_to_verdict` (graded candidate requests for a 50% and 80% chance of
   the WORSE verdict) against the simulated distribution of the request at which the verdict came.
3. Guardrails A/A (``--guardrail-experiments``): the real `RolloutManager` with every rollback test on (pass
   rate, the unparseable / crash / timeout guardrails, error bursts, SRM), its steps never advancing
   (``min_graded`` 1e9) so each experiment runs its whole horizon, peeked after EVERY observation: client
   requests at a 10% canary (the base embedded model's outcome mix, 2% request errors) and a probe pair
   (both arms, another outcome mix) every 4th request. The share of experiments ever rolled back must be
   <= alpha, with the tests it came from.
4. Rollback: the real `RolloutManager` (recording hooks from ``src/coding_framework/testing/rollouts.py``,
   a real SQLite MLflow store) under simulated canary traffic: candidate requests (graded or not) until it
   rolled back, for a drop 0.6 -> 0.3, a broken candidate that always fails its tests (0.6 -> 0), one that
   always errors (no grades at all), and an A/A (0.6 -> 0.6, where any rollback is a false one).

Writes ``benchmarks/results/serving_stats.json`` and ``serving_stats.png`` (false-positive rate against
the number of peeks).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats as sps

from benchmarks.harness import RESULTS, LoadMonitor, write_result
from coding_framework.config.rollout import RolloutPolicy
from coding_framework.serving.rollouts.guardrails import error_budget
from coding_framework.serving.rollouts.manager import RolloutManager
from coding_framework.serving.rollouts.outcomes import Outcome
from coding_framework.serving.rollouts.stats import Verdict, compare, confidence_sequence, samples_to_verdict
from coding_framework.testing.rollouts import RecordingHooks, Traffic

POLICY = RolloutPolicy()
ALPHA, TAU = POLICY.alpha, POLICY.mixture_tau
SETTINGS = [(0.6, 0.1), (0.6, 0.5), (0.3, 0.1), (0.1, 0.5)]  # (pass rate, candidate share)


def _experiment(rng: np.random.Generator, p: float, share: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    arm = rng.random(n) < share
    return arm, rng.random(n) < p


def _first_sequential(arm: np.ndarray, y: np.ndarray) -> int:
    """Index of the first peek at which the confidence sequence excludes 0; -1 if none."""
    s, t = [0, 0], [0, 0]
    for i, (a, v) in enumerate(zip(arm.tolist(), y.tolist(), strict=True)):
        s[a] += v
        t[a] += 1
        _, lower, upper = confidence_sequence((s[0], t[0]), (s[1], t[1]), ALPHA, TAU)
        if lower > 0 or upper < 0:
            return i
    return -1


def _first_naive(arm: np.ndarray, y: np.ndarray) -> int:
    """First peek at which a two-sided Welch t-test at 5% rejects (both arms >= 2 observations)."""
    yf = y.astype(float)
    n1, n0 = np.cumsum(arm), np.cumsum(~arm)
    s1, s0 = np.cumsum(yf * arm), np.cumsum(yf * ~arm)
    with np.errstate(all="ignore"):
        m1, m0 = s1 / n1, s0 / n0
        v1, v0 = m1 * (1 - m1) * n1 / (n1 - 1), m0 * (1 - m0) * n0 / (n0 - 1)
        se2 = v1 / n1 + v0 / n0
        t = (m1 - m0) / np.sqrt(se2)
        df = se2**2 / ((v1 / n1) ** 2 / (n1 - 1) + (v0 / n0) ** 2 / (n0 - 1))
        reject = (n1 >= 2) & (n0 >= 2) & (se2 > 0) & (2 * sps.t.sf(np.abs(t), df) < 0.05)
    hits = np.flatnonzero(reject)
    return int(hits[0]) if hits.size else -1


def aa(experiments: int, observations: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    rows, curves = [], {}
    for p, share in SETTINGS:
        seq, naive = [], []
        for _ in range(experiments):
            arm, y = _experiment(rng, p, share, observations)
            seq.append(_first_sequential(arm, y))
            naive.append(_first_naive(arm, y))
        seq_a, naive_a = np.array(seq), np.array(naive)
        rows.append({"pass_rate": p, "candidate_share": share, "experiments": experiments,
                     "peeks": observations, "fpr_sequential": float(np.mean(seq_a >= 0)),
                     "fpr_naive_t_test": float(np.mean(naive_a >= 0))})
        peeks = np.unique(np.geomspace(1, observations, 60).astype(int))
        curves[f"p={p}, share={share}"] = {
            "peeks": peeks.tolist(),
            "sequential": [float(np.mean((seq_a >= 0) & (seq_a < k))) for k in peeks],
            "naive": [float(np.mean((naive_a >= 0) & (naive_a < k))) for k in peeks]}
        print(json.dumps(rows[-1]), flush=True)
    return {"rows": rows, "curves": curves}


def power_check(simulations: int, seed: int) -> list[dict[str, Any]]:
    """Predicted vs simulated graded candidate requests until the WORSE verdict (0.6 -> 0.3)."""
    rng = np.random.default_rng(seed)
    out = []
    for share in (0.1, 0.5):
        needed = []
        for _ in range(simulations):
            s, t = [0, 0], [0, 0]
            while True:
                a = int(rng.random() < share)
                s[a] += int(rng.random() < (0.3 if a else 0.6))
                t[a] += 1
                if compare((s[0], t[0]), (s[1], t[1]), alpha=ALPHA, tau=TAU,
                           margin=POLICY.margin).verdict is Verdict.WORSE:
                    needed.append(t[1])
                    break
        kw = {"share": share, "alpha": ALPHA, "tau": TAU}
        out.append({"drop": "0.6 -> 0.3", "candidate_share": share, "simulations": simulations,
                    "predicted_median": samples_to_verdict(0.6, 0.3, **kw),
                    "simulated_median": float(np.median(needed)),
                    "predicted_80pct": samples_to_verdict(0.6, 0.3, target=0.8, **kw),
                    "simulated_80pct": float(np.percentile(needed, 80))})
        print(json.dumps(out[-1]), flush=True)
    return out


async def _one_rollout(
    uri: str, seed: int, pass_rate: float, error_rate: float, cap: int
) -> dict[str, Any]:
    champ, cand = "champion@0000", "candidate@0000"
    manager = RolloutManager(champ, RolloutPolicy(drain_s=0), RecordingHooks(), tracking_uri=uri,
                             rng=random.Random(seed))
    started = await manager.start("candidate", "canary", None)
    traffic = Traffic(manager, {champ: 0.6, cand: pass_rate}, error_rates={cand: error_rate},
                      rng=random.Random(seed + 1))
    final = traffic.run_until_done(started["id"], cap)
    await manager.aclose()
    arm = final["arms"][cand]
    return {"status": final["status"], "graded": arm["graded"], "requests": arm["requests"],
            "reason": final["reason"].split(":")[0]}


async def rollbacks(rollouts: int, cap: int, seed: int) -> list[dict[str, Any]]:
    scenarios = [("drop 0.6 -> 0.3", 0.3, 0.0), ("broken: always fails its tests", 0.0, 0.0),
                 ("broken: always errors", 0.6, 1.0), ("A/A 0.6 -> 0.6", 0.6, 0.0)]
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        uri = f"sqlite:///{tmp}/mlflow.db"
        for name, pass_rate, error_rate in scenarios:
            runs = [await _one_rollout(uri, seed + 10 * i, pass_rate, error_rate, cap)
                    for i in range(rollouts)]
            back = [r for r in runs if r["status"] == "rolled_back"]
            row = {"scenario": name, "rollouts": rollouts, "request_cap": cap,
                   "rolled_back": len(back) / rollouts,
                   "reasons": sorted({r["reason"] for r in back}),
                   "promoted": sum(r["status"] == "promoted" for r in runs) / rollouts}
            ahead = [r for r in runs if r["status"] == "promoted"]
            for key, group, end in (("graded", back, "rollback"), ("requests", back, "rollback"),
                                    ("graded", ahead, "promotion")):
                values = [r[key] for r in group] or [0]
                row[f"candidate_{key}_to_{end}"] = {
                    "median": float(np.median(values)), "p90": float(np.percentile(values, 90)),
                    "max": int(np.max(values))}
            out.append(row)
            print(json.dumps(row), flush=True)
    return out


# Outcome mixes of an A/A: clients' /v1/solve answers and probe answers (synthetic:heldout-like: ~5% pass).
CLIENT_MIX = {Outcome.PASSED: 0.30, Outcome.FAILED: 0.45, Outcome.UNPARSEABLE: 0.10, Outcome.CRASHED: 0.12,
              Outcome.TIMED_OUT: 0.03}
PROBE_MIX = {Outcome.PASSED: 0.05, Outcome.FAILED: 0.55, Outcome.UNPARSEABLE: 0.20, Outcome.CRASHED: 0.17,
             Outcome.TIMED_OUT: 0.03}


async def _guarded_aa(uri: str, seed: int, observations: int, policy: RolloutPolicy) -> str:
    """One A/A through the real manager; the rollback's test name, or '' if it was never rolled back."""
    champ, cand = "champion@0000", "candidate@0000"
    manager = RolloutManager(champ, policy, RecordingHooks(), tracking_uri=uri, rng=random.Random(seed))
    rng = random.Random(seed + 1)
    started = await manager.start("candidate", "canary", [10, 100])
    outcomes, client_w, probe_w = list(Outcome), list(CLIENT_MIX.values()), list(PROBE_MIX.values())
    for i in range(observations):
        version = manager.route(f"s{seed}-{i}").version
        error = rng.random() < 0.02
        manager.observe(version, latency_s=0.01, error=error, tokens=20)
        if not error:
            manager.observe_grade(version, rng.choices(outcomes, client_w)[0])
        if i % 4 == 0:
            for v in (champ, cand):
                manager.observe_grade(v, rng.choices(outcomes, probe_w)[0], "probe")
        if manager.active is None:
            break
    final = manager.status(started["id"])
    await manager.aclose()
    return final["reason"].split(":")[0] if final["status"] == "rolled_back" else ""


async def guardrails_aa(experiments: int, observations: int, seed: int) -> dict[str, Any]:
    """A/A false-positive rate (rolled back at any peek) with every rollback test on."""
    out: dict[str, Any] = {"experiments": experiments, "peeks": observations, "candidate_share": 0.1,
                           "probe_pairs_per_request": 0.25, "client_mix": CLIENT_MIX, "probe_mix": PROBE_MIX}
    policy = RolloutPolicy(min_graded=10**9, max_graded=None, max_duration_s=None, drain_s=0)
    with tempfile.TemporaryDirectory() as tmp:
        uri = f"sqlite:///{tmp}/mlflow.db"
        fired = [await _guarded_aa(uri, seed + 10 * i, observations, policy) for i in range(experiments)]
    out["false_positive_rate"] = sum(map(bool, fired)) / experiments
    out["by_test"] = dict(Counter(filter(None, fired)))
    out["budget"] = error_budget(policy.alpha, policy.pass_share)
    print(json.dumps({k: out[k] for k in ("false_positive_rate", "by_test")}), flush=True)
    return out


def plot(curves: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, (label, c) in enumerate(curves.items()):
        color = f"C{i}"
        ax.plot(c["peeks"], c["naive"], color=color, linestyle="--", label=f"naive t-test, {label}")
        ax.plot(c["peeks"], c["sequential"], color=color, label=f"mSPRT sequence, {label}")
    ax.axhline(ALPHA, color="black", linewidth=0.8, label=f"alpha = {ALPHA}")
    ax.set_xscale("log")
    ax.set_xlabel("peeks (one after every graded request)")
    ax.set_ylabel("A/A false-positive rate so far")
    ax.set_title("Continuous monitoring: always-valid test vs a peeked t-test")
    ax.legend(fontsize=6, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=130)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--experiments", type=int, default=2000, help="A/A experiments per setting.")
    ap.add_argument("--observations", type=int, default=2000, help="Graded requests (= peeks) per A/A.")
    ap.add_argument("--power-simulations", type=int, default=1000)
    ap.add_argument("--rollouts", type=int, default=200, help="RolloutManager runs per scenario.")
    ap.add_argument("--request-cap", type=int, default=20_000, help="Requests per rollout before giving up.")
    ap.add_argument("--guardrail-experiments", type=int, default=2000, help="Guardrail A/A experiments.")
    ap.add_argument("--guardrail-observations", type=int, default=1000, help="Requests (= peeks) per one.")
    ap.add_argument("--only-guardrails", action="store_true", help="Run section 3 only (its own file).")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=RESULTS / "serving_stats.json")
    args = ap.parse_args()
    began = time.perf_counter()
    with LoadMonitor() as load:
        report: dict[str, Any] = {"guardrails_aa": asyncio.run(
            guardrails_aa(args.guardrail_experiments, args.guardrail_observations, args.seed + 3))}
        if not args.only_guardrails:
            result = aa(args.experiments, args.observations, args.seed)
            report |= {
                "policy": {"alpha": ALPHA, "mixture_tau": TAU, "margin": POLICY.margin,
                           "min_graded": POLICY.min_graded, "steps": POLICY.steps,
                           "error_burst": f"{POLICY.error_burst} of {POLICY.error_window}"},
                "aa": result["rows"],
                "power": power_check(args.power_simulations, args.seed + 1),
                "rollback": asyncio.run(rollbacks(args.rollouts, args.request_cap, args.seed + 2)),
                "aa_curves": result["curves"],
            }
    report["seconds"] = round(time.perf_counter() - began, 1)
    if args.only_guardrails:
        write_result(args.out.with_name("serving_guardrails_aa.json"), {"alpha": ALPHA, **report}, load)
        return
    write_result(args.out, report, load)
    plot(result["curves"], args.out.with_suffix(".png"))
    keys = ("scenario", "rolled_back", "candidate_graded_to_rollback", "candidate_requests_to_rollback")
    print(json.dumps({"aa": report["aa"], "power": report["power"],
                      "rollback": [{k: r[k] for k in keys} for r in report["rollback"]]}))


if __name__ == "__main__":
    main()
