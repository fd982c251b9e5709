"""Mutation kill rates of the tests of HumanEval, MBPP and the built-in set, graded by our grader.

Reproduce (from the repo root, with ../shared/data present, or pass --data-dir):

    .venv/bin/python -m benchmarks.grading.mutation_kill_rates                 # cap 10 mutants per problem
    .venv/bin/python -m benchmarks.grading.mutation_kill_rates --only mbpp --augment \
        --out benchmarks/results/mutation_kill_rates_mbpp_augmented.json

For each dataset: operator and constant mutants of every problem's references (a seeded draw of at most
--cap per problem, see coding_framework.curation.mutants), each graded against the problem's tests. The
kill rate is killed / valid mutants, pooled over the dataset and averaged per problem. Problems below
--min-kill-rate are flagged; with --augment they get differential asserts and are measured again.
Surviving mutants include equivalent ones, so every figure is a lower bound on the tests' strength.
Results go to benchmarks/results/mutation_kill_rates.json with the machine and load they were measured
under, and a histogram per dataset (mutation_kill_rates.png).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from benchmarks.harness import RESULTS, ROOT, LoadMonitor, cpu_name, write_result
from coding_framework.config import SandboxConfig
from coding_framework.curation import dataset_kill_rate, filter_by_strength
from coding_framework.grading import Grader
from coding_framework.problems import Problem, load_benchmark

OUT = RESULTS / "mutation_kill_rates.json"
DEFAULT_DATA = ROOT.parent / "shared" / "data"


def datasets(data_dir: Path) -> dict[str, list[Problem]]:
    return {
        "humaneval": load_benchmark("humaneval", data_dir / "humaneval" / "HumanEval.jsonl.gz"),
        "mbpp": load_benchmark("mbpp", data_dir / "mbpp" / "mbpp.jsonl"),
        "builtin": load_benchmark("builtin"),
    }



def measure(name: str, problems: list[Problem], grader: Grader, args: argparse.Namespace) -> dict:
    start = time.perf_counter()
    report = filter_by_strength(
        problems, grader, min_kill_rate=args.min_kill_rate, cap=args.cap, augment=args.augment, progress=True
    )
    elapsed = time.perf_counter() - start
    unmeasured = [s.task_id for s in report.strengths if s.kill_rate is None]
    return {
        **dataset_kill_rate(report.strengths),
        "seconds": round(elapsed, 1),
        "mutants_per_second": round(sum(s.total for s in report.strengths) / elapsed, 1),
        "flagged": report.flagged,
        "strengthened": {k: [round(v, 3) for v in pair] for k, pair in report.strengthened.items()},
        "unmeasured": unmeasured,
        "kill_rates": {s.task_id: s.kill_rate for s in report.strengths},
        "by_operator": _by_operator(report),
    }


def _by_operator(report) -> dict[str, dict[str, int]]:
    """Survivors per mutation operator (over the problems that were measured)."""
    out: dict[str, dict[str, int]] = {}
    for s in report.strengths:
        if s.kill_rate is None:
            continue
        for m in s.survivors:
            out.setdefault(m.operator, {"survived": 0})["survived"] += 1
    return out


def plot(results: dict[str, dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(4.5 * len(results), 3.5), squeeze=False)
    for ax, (name, res) in zip(axes[0], results.items(), strict=True):
        rates = [r for r in res["kill_rates"].values() if r is not None]
        ax.hist(rates, bins=10, range=(0, 1), color="tab:green", edgecolor="white")
        ax.set_title(f"{name}: pooled {res['pooled_kill_rate']:.3f}")
        ax.set_xlabel("kill rate per problem")
        ax.set_ylabel("problems")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--cap", type=int, default=10, help="Most mutants per problem.")
    parser.add_argument("--min-kill-rate", type=float, default=0.7)
    parser.add_argument("--augment", action="store_true", help="Strengthen flagged problems and re-measure.")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--timeout", type=float, default=3.0, help="Seconds per graded mutant.")
    parser.add_argument("--only", nargs="*", default=None, help="Dataset names to run (default: all).")
    parser.add_argument("--out", type=Path, default=OUT, help="JSON results (a PNG goes next to it).")
    args = parser.parse_args()
    sets = datasets(args.data_dir)
    chosen = {k: v for k, v in sets.items() if args.only is None or k in args.only}
    config = SandboxConfig.model_validate({"workers": args.workers, "limits": {"timeout_s": args.timeout}})
    results = {}
    with LoadMonitor() as load, Grader(config) as grader:
        for name, problems in chosen.items():
            results[name] = measure(name, problems, grader, args)
            print(name, json.dumps({k: v for k, v in results[name].items() if k not in ("kill_rates",)}))
    report = {
        "cap": args.cap,
        "min_kill_rate": args.min_kill_rate,
        "augment": args.augment,
        "timeout_s": args.timeout,
        "datasets": results,
    }
    write_result(args.out, report, load)
    plot(results, args.out.with_suffix(".png"))
    summary = {
        k: {m: v[m] for m in ("pooled_kill_rate", "mean_kill_rate", "mutants")} for k, v in results.items()
    }
    print(
        json.dumps(
            {"cpu": cpu_name(), **summary, "flagged": {k: len(v["flagged"]) for k, v in results.items()}}
        )
    )


if __name__ == "__main__":
    main()
