"""Learned per-problem limits (grading/limits.py) against one flat timeout, on honest runs they were not
calibrated on.

Reproduce (from the repository root, with the HumanEval and MBPP files under ../shared/data or --data):

    .venv/bin/python -m benchmarks.grading.executor_limits                    # with 2 busy processes
    .venv/bin/python -m benchmarks.grading.executor_limits --load 0 --reps 5  # no added load
    .venv/bin/python -m benchmarks.grading.executor_limits --limit 20         # 20 problems per set

Limits are learned per problem from honest runs of that problem, so what generalisation means here is
other honest runs of the same problems. The learned arm calibrates on each problem's first reference
solution only (``LimitLearner.calibrate``, its ``repetitions`` runs, under the ambient load alone); then
``--load`` busy processes start and, for each arm (flat: every problem under ``--timeout``; learned:
``limit_learning.enabled``, same ceiling):

1. slow drafts, one per problem: the reference solution with its entry point replaced by an infinite loop
   (even problems) or a long sleep (odd ones). Sandbox seconds = the judge's duration_s summed over them,
   plus the wall time of the whole batch;
2. unseen honest runs, in one batch (so every run is graded under the limits calibration set): the
   problems' other correct solutions (the built-in set has 2-3 distinct ones per problem; HumanEval and
   MBPP have one), and fresh runs of the calibrated reference under the added load, ``--reps`` times each.
   A false timeout is an honest run that timed out.

In-sample, a calibration run cannot time out under its own learned limit unless the ceiling clamps it
(the limit is ``time_margin`` x the slowest calibration run + slack); ``calibration_problems_over_limit``
counts the problems where it did, and ``calibration_runs_failed`` the calibration runs that failed under
the ceiling itself (a reference slower than the flat timeout). Results go to
benchmarks/results/executor_limits.json and .png.
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.harness import RESULTS, ROOT, LoadMonitor, cpu_name, write_result
from coding_framework.config import SandboxConfig
from coding_framework.config.sandbox import LimitLearningConfig, ResourceLimits
from coding_framework.grading import Grader
from coding_framework.problems import load_benchmark
from coding_framework.problems.problem import Problem
from coding_framework.sandbox import ExecutionResult

DATA = ROOT.parent / "shared" / "data"
SETS = {
    "humaneval": "humaneval/HumanEval.jsonl.gz",
    "mbpp-sanitized": "mbpp/sanitized-mbpp.json",
    "builtin": None,
}
UNSEEN = ("other_solutions", "fresh_reference_runs")


def slow_draft(problem: Problem, index: int) -> str:
    body = "    while True:\n        pass\n" if index % 2 == 0 else "    import time\n    time.sleep(3600)\n"
    return f"{problem.solutions[0]}\n\ndef {problem.entry_point}(*args, **kwargs):\n{body}"


def load_problems(data: Path, limit: int | None) -> list[Problem]:
    problems: list[Problem] = []
    for name, file in SETS.items():
        loaded = [p for p in load_benchmark(name, None if file is None else data / file) if p.solutions]
        problems += loaded[:limit]
    return problems


def honest_summary(items: list[tuple[Problem, str]], results: list[ExecutionResult],
                   limits: list[float]) -> dict[str, Any]:
    """False timeouts among honest runs, and how close the slowest came to its limit."""
    timed_out = [p.task_id for (p, _), r in zip(items, results, strict=True) if r.status == "timeout"]
    ratios = sorted(r.duration_s / t for r, t in zip(results, limits, strict=True))
    return {
        "runs": len(results),
        "problems": len({p.task_id for p, _ in items}),
        "false_timeouts": len(timed_out),
        "false_timeout_rate": len(timed_out) / len(results) if results else None,
        "false_timeout_tasks": sorted(set(timed_out)),
        "other_failures": sum(not r.passed and r.status != "timeout" for r in results),
        "duration_over_limit_max": ratios[-1] if ratios else None,
        "duration_over_limit_p99": ratios[int(0.99 * (len(ratios) - 1))] if ratios else None,
    }


@contextlib.contextmanager
def busy(n: int) -> Iterator[None]:
    """``n`` processes spinning on the CPU for the block."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def run_arm(problems: list[Problem], config: SandboxConfig, reps: int, load: int) -> dict[str, Any]:
    arm: dict[str, Any] = {}
    with Grader(config) as grader:
        grader.sandbox.warmup()
        if grader.limits is not None:
            first_only = [p.model_copy(update={"solutions": p.solutions[:1]}) for p in problems]
            start = time.perf_counter()
            grader.limits.calibrate(grader.sandbox, first_only)
            arm["calibration_wall_s"] = time.perf_counter() - start
            arm["calibration_runs"] = len(problems) * grader.limits.config.repetitions
            timeouts = [grader.limits.limits_for(p).timeout_s for p in problems]
            arm["learned_timeout_s"] = {"min": min(timeouts), "median": sorted(timeouts)[len(timeouts) // 2],
                                        "max": max(timeouts)}  # fmt: skip
            timings = [grader.limits.timings(p.task_id) for p in problems]
            arm["calibration_problems_over_limit"] = sum(
                t is not None and t.slowest_s > limit for t, limit in zip(timings, timeouts, strict=True)
            )
            failed = {p.task_id: len(t.references_failed) for p, t in zip(problems, timings, strict=True)
                      if t is not None and t.references_failed}
            arm["calibration_runs_failed"] = {"runs": sum(failed.values()), "tasks": sorted(failed)}
            arm["problems_at_floor"] = sum(t <= grader.limits.config.time_floor_s for t in timeouts)
        with busy(load):
            drafts = [(p, slow_draft(p, i)) for i, p in enumerate(problems)]
            start = time.perf_counter()
            results = grader.grade_many(drafts, progress="slow drafts")
            arm["drafts"] = {
                "samples": len(results),
                "wall_s": time.perf_counter() - start,
                "sandbox_s": sum(r.duration_s for r in results),
                "passed": sum(r.passed for r in results),
                "timed_out": sum(r.status == "timeout" for r in results),
            }
            kinds = {
                "other_solutions": [(p, s) for p in problems for s in p.solutions[1:] for _ in range(reps)],
                "fresh_reference_runs": [(p, p.solutions[0]) for p in problems for _ in range(reps)],
            }
            honest = [item for kind in UNSEEN for item in kinds[kind]]
            # Limits as the batch is graded: its own passes are observed only after every job is built.
            limits = [(grader.limits.limits_for(p) if grader.limits else config.limits).timeout_s
                      for p, _ in honest]
            start = time.perf_counter()
            results = grader.grade_many(honest, progress="unseen honest runs")
            arm["honest_wall_s"] = time.perf_counter() - start
        at = 0
        for kind in UNSEEN:
            n = len(kinds[kind])
            arm[kind] = honest_summary(kinds[kind], results[at:at + n], limits[at:at + n])
            at += n
        arm["honest"] = honest_summary(honest, results, limits)
    return arm


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    arms = ["flat", "learned"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    left.bar(arms, [report[a]["drafts"]["sandbox_s"] for a in arms], color=["#888", "#2a7"])
    left.set_title("sandbox seconds on slow drafts")
    for i, kind in enumerate(UNSEEN):
        rates = [100 * (report[a][kind]["false_timeout_rate"] or 0.0) for a in arms]
        right.bar([x + 0.4 * i for x in range(len(arms))], rates, width=0.4, label=kind.replace("_", " "))
    right.set_xticks([x + 0.2 for x in range(len(arms))], arms)
    right.set_title("false timeouts on unseen honest runs (%)")
    right.legend(fontsize=8)
    fig.suptitle(f"{cpu_name()}, {report['problems']} problems, "
                 f"+{report['added_load']} busy processes after calibration")
    fig.tight_layout()
    fig.savefig(path)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3, help="runs of each unseen honest program per arm")
    ap.add_argument("--load", type=int, default=2,
                    help="busy processes competing for the CPU after calibration")
    ap.add_argument("--limit", type=int, default=None, help="at most this many problems per set")
    ap.add_argument("--timeout", type=float, default=3.0, help="the flat timeout; the learned arm's ceiling")
    ap.add_argument("--data", type=Path, default=DATA, help="folder with humaneval/ and mbpp/")
    ap.add_argument("--backend", default="process", help="sandbox backend: process (bwrap) or docker")
    args = ap.parse_args()
    problems = load_problems(args.data, args.limit)
    ceiling = ResourceLimits(timeout_s=args.timeout)
    flat = SandboxConfig(backend=args.backend, limits=ceiling)
    learned = flat.model_copy(update={"limit_learning": LimitLearningConfig(enabled=True)})
    report: dict[str, Any] = {
        "problems": len(problems), "added_load": args.load, "reps": args.reps,
        "calibrated_on": "each problem's first reference solution, before the added load",
        "unseen": {"other_solutions": "the problem's other correct reference solutions",
                   "fresh_reference_runs": "new runs of the calibrated reference under the added load"},
    }
    with LoadMonitor() as monitor:
        report["flat"] = run_arm(problems, flat, args.reps, args.load)
        report["learned"] = run_arm(problems, learned, args.reps, args.load)
    saved = 1 - report["learned"]["drafts"]["sandbox_s"] / report["flat"]["drafts"]["sandbox_s"]
    report["sandbox_seconds_saved"] = saved
    for arm in ("flat", "learned"):
        d = report[arm]["drafts"]
        print(f"{arm:8s} slow drafts: {d['sandbox_s']:.1f} sandbox-s, {d['wall_s']:.1f} s wall")
        for kind in UNSEEN:
            h = report[arm][kind]
            print(f"  {kind}: false timeouts {h['false_timeouts']}/{h['runs']} {h['false_timeout_tasks']}")
    over = report["learned"]["calibration_problems_over_limit"]
    print(f"learned: problems whose calibration runs exceed their own limit: {over}")
    print(f"sandbox seconds saved on slow drafts: {100 * saved:.1f}%")
    write_result(RESULTS / "executor_limits.json", report, monitor)
    plot(report, RESULTS / "executor_limits.png")


if __name__ == "__main__":
    main()
