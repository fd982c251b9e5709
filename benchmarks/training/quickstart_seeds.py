"""The quickstart's filed seeds of one build, summed up: per-seed before -> after, mean gain and range.

Reproduce (each seed files its own result; this script only reads them):

    coding-framework quickstart --seed N --results-dir benchmarks/results/quickstart     # N = 0, 1, 2
    python -m benchmarks.training.quickstart_seeds                                     # the shipped build

``--compare DIR`` adds, for each seed filed under both, how far the other run's figures are from these
(and, while both runs' directories exist, their trained weights and per-step rewards):
with ``DIR`` filled by the same runs under other float kernels (``ATEN_CPU_CAPABILITY=avx2
MKL_ENABLE_INSTRUCTIONS=AVX2 DNNL_MAX_CPU_ISA=AVX2``), that is how much RL's own arithmetic moves the result
when every machine starts from the same weights. Writes ``<results dir>/<build>/summary.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from benchmarks.harness import RESULTS, write_result
from coding_framework.embedded.reference import manifest

FIGURES = ("baseline_pass@1", "trained_pass@1", "improvement")
KEPT = (*FIGURES, "seconds", "model_sha256", "cpu", "arithmetic", "load_avg")


def seeds(folder: Path) -> dict[int, dict[str, Any]]:
    runs = [json.loads(p.read_text()) for p in sorted(folder.glob("seed*.json"))]
    return {run["seed"]: run for run in runs}


def summary(runs: dict[int, dict[str, Any]]) -> dict[str, Any]:
    gains = [run["improvement"] for run in runs.values()]
    return {
        "seeds": {seed: {k: run[k] for k in KEPT if k in run} for seed, run in sorted(runs.items())},
        "mean_gain": round(statistics.fmean(gains), 4),
        "min_gain": min(gains),
        "max_gain": max(gains),
        "every_seed_improved": all(g > 0 for g in gains),
        "gain_points": {"mean": round(100 * statistics.fmean(gains), 1), "min": round(100 * min(gains), 1),
                        "max": round(100 * max(gains), 1)},
    }


def compare(runs: dict[int, dict[str, Any]], other: dict[int, dict[str, Any]]) -> dict[str, Any]:
    shared = sorted(set(runs) & set(other))
    return {seed: {k: round(other[seed][k] - runs[seed][k], 4) for k in FIGURES} | {
        "same_starting_weights": other[seed]["model_sha256"] == runs[seed]["model_sha256"],
        "arithmetic": other[seed].get("arithmetic"),
    } | trained_apart(runs[seed], other[seed]) for seed in shared}


def trained_apart(run: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    """How far the two runs' trained weights and per-step rewards are apart, while both run dirs exist."""
    import torch
    from safetensors.torch import load_file

    weights = [Path(r["final_model_dir"]) / "model.safetensors" for r in (run, other)]
    histories = [Path(r["run_dir"]) / "results.json" for r in (run, other)]
    if not all(p.is_file() for p in (*weights, *histories)):
        return {}
    a, b = (load_file(p) for p in weights)
    rewards = [[s["metrics"]["reward_mean"] for s in json.loads(p.read_text())["history"]] for p in histories]
    return {
        "weights_max_abs_diff": max((a[k] - b[k]).abs().max().item() for k in a),
        "weights_differing": sum(int(torch.ne(a[k], b[k]).sum()) for k in a),
        "weights_total": sum(t.numel() for t in a.values()),
        "reward_mean_per_step_equal": rewards[0] == rewards[1],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results-dir", type=Path, default=RESULTS / "quickstart")
    ap.add_argument("--build", default=(manifest() or {}).get("name"), help="default: the shipped build")
    ap.add_argument("--compare", type=Path, help="another results dir with runs of the same build")
    args = ap.parse_args()
    folder = args.results_dir / args.build
    runs = seeds(folder)
    if not runs:
        sys.exit(f"no seed*.json under {folder}; run `coding-framework quickstart --results-dir` first")
    figures = {"build": args.build} | summary(runs)
    if args.compare is not None:
        other = seeds(args.compare / args.build)
        figures["compared_with"] = {"dir": str(args.compare), "seeds": compare(runs, other)}
    out = write_result(folder / "summary.json", figures)
    print(json.dumps(figures, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
