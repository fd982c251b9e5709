"""Learned per-problem limits (grading/limits.py) against one flat timeout, side by side in one run.

Reproduce (from the repository root, with the HumanEval and MBPP files under ../shared/data or --data):

    .venv/bin/python benchmarks/executor_limits.py                    # HumanEval, MBPP (sanitized), built-in
    .venv/bin/python benchmarks/executor_limits.py --load 2 --reps 5  # with 2 busy processes competing
    .venv/bin/python benchmarks/executor_limits.py --limit 20         # 20 problems per set: a quick check

For each arm (flat: every problem under `--timeout`; learned: `limit_learning.enabled`, same ceiling):
1. slow drafts, one per problem: the reference solution with its entry point replaced by an infinite loop
   (even problems) or a long sleep (odd ones). Sandbox seconds = the judge's duration_s summed over them,
   plus the wall time of the whole batch;
2. honest runs: every reference solution `--reps` times. A false timeout is a reference that timed out.
The learned arm also reports what calibration cost (the reference runs that set its limits).
Results go to benchmarks/results/executor_limits.json and .png.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from serving_common import cpu_name

from coding_framework.config import SandboxConfig
from coding_framework.config.sandbox import LimitLearningConfig, ResourceLimits
from coding_framework.grading import Grader
from coding_framework.problems import load_benchmark
from coding_framework.problems.problem import Problem

RESULTS = Path(__file__).resolve().parent / "results"
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SETS = {
    "humaneval": "humaneval/HumanEval.jsonl.gz",
    "mbpp-sanitized": "mbpp/sanitized-mbpp.json",
    "builtin": None,
}


def slow_draft(problem: Problem, index: int) -> str:
    body = "    while True:\n        pass\n" if index % 2 == 0 else "    import time\n    time.sleep(3600)\n"
    return f"{problem.solutions[0]}\n\ndef {problem.entry_point}(*args, **kwargs):\n{body}"


def load_problems(data: Path, limit: int | None) -> list[Problem]:
    problems: list[Problem] = []
    for name, file in SETS.items():
        loaded = [p for p in load_benchmark(name, None if file is None else data / file) if p.solutions]
        problems += loaded[:limit]
    return problems


def run_arm(problems: list[Problem], config: SandboxConfig, reps: int) -> dict[str, Any]:
    arm: dict[str, Any] = {}
    with Grader(config) as grader:
        grader.sandbox.warmup()
        if grader.limits is not None:
            start = time.perf_counter()
            grader.limits.calibrate(grader.sandbox, problems)
            arm["calibration_wall_s"] = time.perf_counter() - start
            timeouts = [grader.limits.limits_for(p).timeout_s for p in problems]
            arm["learned_timeout_s"] = {"min": min(timeouts), "median": sorted(timeouts)[len(timeouts) // 2],
                                        "max": max(timeouts)}  # fmt: skip
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
        honest = [(p, s) for p in problems for s in p.solutions for _ in range(reps)]
        start = time.perf_counter()
        results = grader.grade_many(honest, progress="reference solutions")
        timed_out = [p.task_id for (p, _), r in zip(honest, results, strict=True) if r.status == "timeout"]
        arm["honest"] = {
            "runs": len(results),
            "wall_s": time.perf_counter() - start,
            "false_timeouts": len(timed_out),
            "false_timeout_rate": len(timed_out) / len(results),
            "false_timeout_tasks": sorted(set(timed_out)),
            "other_failures": sum(not r.passed and r.status != "timeout" for r in results),
        }
    return arm


def start_load(n: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    arms = ["flat", "learned"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.5))
    left.bar(arms, [report[a]["drafts"]["sandbox_s"] for a in arms], color=["#888", "#2a7"])
    left.set_title("sandbox seconds on slow drafts")
    right.bar(arms, [100 * report[a]["honest"]["false_timeout_rate"] for a in arms], color=["#888", "#2a7"])
    right.set_title("false timeouts on references (%)")
    fig.suptitle(f"{report['cpu']}, {report['problems']} problems, load +{report['load']}")
    fig.tight_layout()
    fig.savefig(path)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3, help="runs of each reference solution per arm")
    ap.add_argument("--load", type=int, default=0, help="busy processes competing for the CPU throughout")
    ap.add_argument("--limit", type=int, default=None, help="at most this many problems per set")
    ap.add_argument("--timeout", type=float, default=3.0, help="the flat timeout; the learned arm's ceiling")
    ap.add_argument("--data", type=Path, default=DATA, help="folder with humaneval/ and mbpp/")
    ap.add_argument("--backend", default="process", help="sandbox backend: process (bwrap) or docker")
    args = ap.parse_args()
    problems = load_problems(args.data, args.limit)
    ceiling = ResourceLimits(timeout_s=args.timeout)
    flat = SandboxConfig(backend=args.backend, limits=ceiling)
    learned = flat.model_copy(update={"limit_learning": LimitLearningConfig(enabled=True)})
    report: dict[str, Any] = {"cpu": cpu_name(), "cores": os.cpu_count(),
                              "problems": len(problems), "load": args.load, "reps": args.reps}  # fmt: skip
    load = start_load(args.load)
    try:
        report["flat"] = run_arm(problems, flat, args.reps)
        report["learned"] = run_arm(problems, learned, args.reps)
    finally:
        for proc in load:
            proc.kill()
    saved = 1 - report["learned"]["drafts"]["sandbox_s"] / report["flat"]["drafts"]["sandbox_s"]
    report["sandbox_seconds_saved"] = saved
    for arm in ("flat", "learned"):
        d, h = report[arm]["drafts"], report[arm]["honest"]
        print(f"{arm:8s} slow drafts: {d['sandbox_s']:.1f} sandbox-s, {d['wall_s']:.1f} s wall; "
              f"false timeouts {h['false_timeouts']}/{h['runs']} {h['false_timeout_tasks']}")  # fmt: skip
    print(f"sandbox seconds saved on slow drafts: {100 * saved:.1f}%")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "executor_limits.json").write_text(json.dumps(report, indent=2) + "\n")
    plot(report, RESULTS / "executor_limits.png")


if __name__ == "__main__":
    main()
