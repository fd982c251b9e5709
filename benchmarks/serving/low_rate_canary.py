"""Canaries at low pass rates, simulated through the real `RolloutManager` (issue 46).

Reproduce:
    .venv/bin/python -m benchmarks.serving.low_rate_canary --experiments 300

At champion pass rates 0.02, 0.05, 0.1, 0.3 and 0.6, with the shipped `RolloutPolicy` (``margin`` 0.1,
``relative_margin`` 0.2, alpha 0.05 split over every rollback test):

1. A/A false rollbacks: champion and candidate are one model. Probe problems go to both arms (pairs) and
   chat-free client /v1/solve traffic is graded too (10% canary, unpaired). Each problem has its own pass
   probability, drawn from a Beta with mean p: concentration 0.3 (answers nearly fixed per problem, as at a
   low temperature: few discordant pairs) and 3 (more sampling noise). Non-passing answers are failed,
   unparseable, crashed or timed out in a fixed mix. The steps never advance (``min_graded`` 1e9), so each
   experiment is peeked after EVERY observation for its whole horizon; a false rollback is an experiment
   ever rolled back. It must be <= alpha = 0.05.
2. A/A promotion on probes alone (chat-only traffic): steps [50, 100], ``min_graded`` 30, a budget of
   ``--promote-budget`` candidate grades: the share promoted and the grades it took.
3. Broken candidates on probes alone: random weights (every answer unparseable) and one broken where
   probes cannot show it (every answer parses and fails). The share promoted must be 0.

Writes ``benchmarks/results/low_rate_canary.json`` and ``low_rate_canary.png``.
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

from benchmarks.harness import RESULTS, LoadMonitor, write_result
from coding_framework.config.rollout import RolloutPolicy
from coding_framework.serving.rollouts.guardrails import error_budget
from coding_framework.serving.rollouts.manager import RolloutManager
from coding_framework.serving.rollouts.outcomes import Outcome
from coding_framework.testing.rollouts import RecordingHooks

RATES = (0.02, 0.05, 0.1, 0.3, 0.6)
CHAMP, CAND = "champion@0000", "candidate@0000"
# How answers that do not pass fail (the embedded model's probe answers, roughly).
FAILURES = {Outcome.FAILED: 0.55, Outcome.UNPARSEABLE: 0.30, Outcome.CRASHED: 0.12, Outcome.TIMED_OUT: 0.03}


class Answers:
    """One model's answers: problem j passes with its own probability q_j ~ Beta(c p, c (1 - p))."""

    def __init__(self, rng: random.Random, p: float, concentration: float, problems: int = 500) -> None:
        self.rng = rng
        self.q = [rng.betavariate(concentration * p, concentration * (1 - p)) for _ in range(problems)]
        self.failures, self.weights = list(FAILURES), list(FAILURES.values())

    def answer(self, problem: int) -> Outcome:
        if self.rng.random() < self.q[problem % len(self.q)]:
            return Outcome.PASSED
        return self.rng.choices(self.failures, self.weights)[0]


# What a broken candidate answers, whatever the problem.
BROKEN = {"random weights": Outcome.UNPARSEABLE, "every answer fails": Outcome.FAILED}


async def _rollout(uri: str, policy: RolloutPolicy, seed: int, p: float, concentration: float,
                   pairs: int, clients_per_pair: int, candidate: str) -> dict[str, Any]:
    rng = random.Random(seed)
    manager = RolloutManager(CHAMP, policy, RecordingHooks(), tracking_uri=uri, rng=random.Random(seed))
    started = await manager.start("candidate", "canary", [10, 100] if clients_per_pair else [50, 100])
    answers = Answers(rng, p, concentration)
    for i in range(pairs):
        problem = rng.randrange(len(answers.q))
        champ = answers.answer(problem)
        cand = answers.answer(problem) if candidate == "A/A" else BROKEN[candidate]
        manager.observe_probe_pair(CHAMP, CAND, (champ, cand))
        for j in range(clients_per_pair):
            version = manager.route(f"s{seed}-{i}-{j}").version
            manager.observe(version, latency_s=0.01, error=False, tokens=20)
            manager.observe_grade(version, answers.answer(rng.randrange(len(answers.q))))
        if manager.active is None:
            break
    final = manager.status(started["id"])
    await manager.aclose()
    return {"status": final["status"], "reason": final["reason"].split(":")[0],
            "candidate_probe_grades": final["arms"][CAND]["probe_graded"]}


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    statuses = Counter(r["status"] for r in runs)
    out: dict[str, Any] = {s: statuses[s] / len(runs) for s in ("promoted", "rolled_back", "inconclusive")}
    out["rollback_tests"] = dict(Counter(r["reason"] for r in runs if r["status"] == "rolled_back"))
    for status in ("promoted", "rolled_back"):
        grades = [r["candidate_probe_grades"] for r in runs if r["status"] == status]
        if grades:
            out[f"probe_grades_to_{status}"] = {"median": float(np.median(grades)),
                                                "p90": float(np.percentile(grades, 90))}
    return out


async def simulate(args: argparse.Namespace) -> dict[str, Any]:
    watch = RolloutPolicy(min_graded=10**9, max_graded=None, max_duration_s=None, drain_s=0)
    promote = RolloutPolicy(min_graded=30, max_graded=args.promote_budget, max_duration_s=None, drain_s=0)
    report: dict[str, Any] = {"false_rollbacks": [], "aa_promotion": [], "broken": []}
    with tempfile.TemporaryDirectory() as tmp:
        uri = f"sqlite:///{tmp}/mlflow.db"
        for p in RATES:
            for concentration in (0.3, 3.0):
                runs = [await _rollout(uri, watch, 1000 * k + 1, p, concentration, args.pairs, 2, "A/A")
                        for k in range(args.experiments)]
                row = {"pass_rate": p, "concentration": concentration, "experiments": args.experiments,
                       "probe_pairs": args.pairs, "client_grades": 2 * args.pairs,
                       "false_rollback_rate": _summary(runs)["rolled_back"],
                       "by_test": _summary(runs)["rollback_tests"]}
                report["false_rollbacks"].append(row)
                print(json.dumps(row), flush=True)
            runs = [await _rollout(uri, promote, 1000 * k + 2, p, 0.3, args.promote_budget, 0, "A/A")
                    for k in range(args.promote_experiments)]
            report["aa_promotion"].append({"pass_rate": p, "concentration": 0.3,
                                           "experiments": args.promote_experiments, **_summary(runs)})
            print(json.dumps(report["aa_promotion"][-1]), flush=True)
            for kind in ("random weights", "every answer fails"):
                runs = [await _rollout(uri, promote, 1000 * k + 3, p, 0.3, args.promote_budget, 0, kind)
                        for k in range(args.promote_experiments)]
                report["broken"].append({"pass_rate": p, "candidate": kind,
                                         "experiments": args.promote_experiments, **_summary(runs)})
                print(json.dumps(report["broken"][-1]), flush=True)
    report["policy"] = {k: getattr(promote, k) for k in ("alpha", "margin", "relative_margin", "mixture_tau")}
    report["promote_budget"] = args.promote_budget
    report["budget"] = error_budget(promote.alpha, promote.pass_share)
    return report


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for concentration, marker in ((0.3, "o"), (3.0, "s")):
        rows = [r for r in report["false_rollbacks"] if r["concentration"] == concentration]
        left.plot([r["pass_rate"] for r in rows], [r["false_rollback_rate"] for r in rows], marker=marker,
                  label=f"per-problem Beta concentration {concentration}")
    left.axhline(report["policy"]["alpha"], color="black", linewidth=0.8, label="alpha = 0.05")
    left.set(xlabel="champion pass rate", ylabel="share of A/As ever rolled back", ylim=(-0.005, 0.06),
             title="A/A false rollbacks, peeked after every grade")
    rows = report["aa_promotion"]
    medians = [r.get("probe_grades_to_promoted", {}).get("median", np.nan) for r in rows]
    right.plot([r["pass_rate"] for r in rows], medians, marker="o", label="median probe grades to promotion")
    right.set(yscale="log", xlabel="champion pass rate", ylabel="candidate probe grades",
              title=f"A/A promotion on probe pairs (budget {report['promote_budget']})")
    share = right.twinx()
    share.plot([r["pass_rate"] for r in rows], [r["promoted"] for r in rows], marker="^", linestyle="--",
               color="C1", label="share promoted within the budget")
    share.set(ylabel="share promoted", ylim=(0, 1.05))
    for ax in (left, right):
        ax.set_xscale("log")
        ax.set_xticks(RATES, [f"{r:g}" for r in RATES])
        ax.minorticks_off()
    left.legend(fontsize=7)
    lines = right.get_legend_handles_labels()[0] + share.get_legend_handles_labels()[0]
    right.legend(lines, [str(line.get_label()) for line in lines], fontsize=7, loc="center right")
    fig.tight_layout()
    fig.savefig(path, dpi=130)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--experiments", type=int, default=300, help="A/A experiments per rate and concentration")
    ap.add_argument("--pairs", type=int, default=600, help="probe pairs per A/A (2 client grades each)")
    ap.add_argument("--promote-experiments", type=int, default=40)
    ap.add_argument("--promote-budget", type=int, default=3000, help="candidate probe grades: the budget")
    ap.add_argument("--out", type=Path, default=RESULTS / "low_rate_canary.json")
    ap.add_argument("--replot", action="store_true", help="only draw the plot of the filed result again")
    args = ap.parse_args()
    if args.replot:
        plot(json.loads(args.out.read_text()), args.out.with_suffix(".png"))
        return
    began = time.perf_counter()
    with LoadMonitor() as load:
        report = asyncio.run(simulate(args))
    report["seconds"] = round(time.perf_counter() - began, 1)
    write_result(args.out, report, load)
    plot(report, args.out.with_suffix(".png"))


if __name__ == "__main__":
    main()
