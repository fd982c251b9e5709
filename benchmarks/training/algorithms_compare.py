"""PPO, GRPO, RLOO, REINFORCE++ and DAPO on the same budget: reward curves and final held-out pass@1.

Reproduce:  .venv/bin/python -m benchmarks.training.algorithms_compare --config grpo_basic --steps 12

Every algorithm trains from the same model with the same config (problems, group size, tokens, LR, KL,
seed; only ``algorithm`` changes, with each registry spec's own defaults: PPO's critic, DAPO's
clip-higher and dynamic sampling) through the multi-turn training graph with the correctness reward.
Reported per algorithm: the correctness-reward curve (mean of the first and last three steps, best
step), held-out pass@1 after training (greedy, single draft, synthetic instances with unseen constants)
and its gain over the untrained model, as a ratio to GRPO's gain (GRPO is the anchor, measured in the
same run), plus seconds per step. One seed per algorithm: differences of a few points are noise.
Results go to benchmarks/results/algorithms_compare.json with the machine record and the starting model's
sha256.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import RESULTS, LoadMonitor, write_result

OUT = RESULTS / "algorithms_compare.json"
ORDER = ("grpo", "ppo", "rloo", "reinforce_pp", "dapo")


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def run_one(base: Any, algorithm: str, run_dir: Path, baseline: bool) -> dict[str, Any]:
    from coding_framework.training.run.setup import configure
    from coding_framework.training.trainer import Trainer

    cfg = configure(base, algorithm=algorithm)
    cfg = cfg.model_copy(
        update={
            "eval": cfg.eval.model_copy(update={"every": 0, "baseline": baseline}),
            "tracking": cfg.tracking.model_copy(update={"registered_model": None, "log_checkpoints": False}),
        }
    )
    start = time.perf_counter()
    results = Trainer(cfg, run_dir, progress=True).run()
    curve = [r.metrics["reward/correctness"] for r in results.history]
    return {
        "algorithm": algorithm,
        "steps": results.steps,
        "early_stop": results.early_stop,
        "reward_first3": _mean(curve[:3]),
        "reward_last3": _mean(curve[-3:]),
        "reward_best": max(curve),
        "reward_curve": curve,
        "heldout_pass@1": results.heldout_pass_at_1,
        "baseline_pass@1": results.baseline_pass_at_1,
        "seconds": time.perf_counter() - start,
        "seconds_per_step": _mean([r.metrics["seconds/step"] for r in results.history]),
    }


def table(rows: list[dict[str, Any]]) -> str:
    head = "| algorithm | reward first 3 | last 3 | best | held-out pass@1 | gain | gain / GRPO's | s/step |"
    lines = [head, "|" + "---|" * 8]
    for r in rows:
        lines.append(
            f"| {r['algorithm']} | {r['reward_first3']:.3f} | {r['reward_last3']:.3f} | "
            f"{r['reward_best']:.3f} | {r['heldout_pass@1']:.3f} | {r['gain']:+.3f} | "
            f"{r['gain_ratio_vs_grpo']:.2f} | {r['seconds_per_step']:.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    from coding_framework.config import load_config
    from coding_framework.config.training import TrainingConfig
    from coding_framework.training.run.setup import starting_model

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="grpo_basic", help="a training YAML path or a shipped config's name")
    ap.add_argument("--steps", type=int, default=None, help="override the config's steps")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--algorithms", nargs="+", default=list(ORDER), choices=ORDER)
    args = ap.parse_args(argv)
    base = load_config(TrainingConfig, args.config, overrides={"steps": args.steps, "seed": args.seed})
    rows: list[dict[str, Any]] = []
    with LoadMonitor() as load, tempfile.TemporaryDirectory(prefix="algos-") as tmp:
        for i, algorithm in enumerate(args.algorithms):
            rows.append(run_one(base, algorithm, Path(tmp) / algorithm, baseline=i == 0))
    baseline = rows[0]["baseline_pass@1"]
    grpo_gain = next((r["heldout_pass@1"] - baseline for r in rows if r["algorithm"] == "grpo"), None)
    for r in rows:
        r["baseline_pass@1"] = baseline
        r["gain"] = r["heldout_pass@1"] - baseline
        r["gain_ratio_vs_grpo"] = r["gain"] / grpo_gain if grpo_gain else float("nan")
    report = {
        "config": str(args.config),
        "training_config": base.model_dump(mode="json"),
        "steps": base.steps,
        "seed": base.seed,
        "baseline_pass@1": baseline,
        "results": rows,
        "table": table(rows),
    }
    write_result(OUT, report, load, model_dir=starting_model(base, progress=False).model_dir)
    print(report["table"])
    print(json.dumps({r["algorithm"]: round(r["heldout_pass@1"], 4) for r in rows} | {"baseline": baseline}))


if __name__ == "__main__":
    main()
