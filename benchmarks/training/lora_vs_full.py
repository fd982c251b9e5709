"""LoRA against full fine-tuning on the quickstart: time per step, peak memory and held-out gain, same
seed, same base and the same step budget.

Reproduce (the full quickstart budget, minutes per side on 2 CPU cores):
    .venv/bin/python -m benchmarks.training.lora_vs_full
A reduced budget that runs in minutes (what the overrides shrink is all that differs between the two):
    .venv/bin/python -m benchmarks.training.lora_vs_full --override steps=2 rollout.problems_per_step=4 \
        rollout.group_size=4 data.heldout_limit=20 eval.samples=1 eval.temperature=0

Each side is one ``Trainer`` run of the shipped ``quickstart`` config (plus the overrides) in a process of
its own, so its peak RSS (``ru_maxrss``) is its own: `full` is the config as shipped (every weight trained,
AdamW state for all of them); `lora` adds ``policies: {mode: shared_lora, rank: R}`` (one adapter that the
Generator calls through, base frozen) and its own learning rate (``--lora-lr``). Reported per side: median
seconds per step and per update, peak RSS, trained parameters and their AdamW state (bytes), held-out
pass@1 before and after and the gain.
Results go to ``benchmarks/results/lora_vs_full.json`` (with the machine record and the base model's sha256)
and ``.png``.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from benchmarks.harness import RESULTS, ROOT, LoadMonitor, write_result

OUT = RESULTS / "lora_vs_full.json"
SIDES = ("full", "lora")


def _args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--side", choices=["both", *SIDES], default="both",
                    help="(internal) one side in this process, its figures to --out")
    ap.add_argument("--config", default="quickstart")
    ap.add_argument("--rank", type=int, default=8)
    ap.add_argument("--lora-lr", type=float, default=1e-2,
                    help="the lora side's learning rate (a zero-initialised B needs a larger step than full "
                         "fine-tuning's; benchmarks/training/per_role_compare.py's LORA_LR)")
    ap.add_argument("--override", nargs="*", default=[], help="KEY=VALUE config overrides for both sides")
    ap.add_argument("--out", type=Path, default=None, help=f"the JSON to write (default {OUT})")
    return ap.parse_args(argv)


def _config(args: argparse.Namespace, side: str) -> Any:
    """The training config of ``side``: the shipped config, ``--override``, and the lora side's policies."""
    from coding_framework.config import load_config
    from coding_framework.config.training import TrainingConfig

    overrides = list(args.override)
    if side == "lora":
        overrides += ["policies.mode=shared_lora", "policies.roles=[generator]", f"policies.rank={args.rank}",
                      f"policies.alpha={2 * args.rank}", f"optim.lr={args.lora_lr}"]
    overrides += ["tracking.log_checkpoints=false"]
    parsed = {k: yaml.safe_load(v) for k, v in (o.split("=", 1) for o in overrides)}
    return load_config(TrainingConfig, args.config, parsed)


def _side(args: argparse.Namespace, side: str, out: Path) -> dict[str, Any]:
    """One training run in this process; its figures."""
    from coding_framework.training import Trainer

    config = _config(args, side)
    with tempfile.TemporaryDirectory(prefix=f"lora-vs-full-{side}-") as run_dir:
        trainer = Trainer(config, run_dir, progress=True)
        params = [p for u in trainer.policies.updates.values() for p in u.params]
        results = trainer.run()
        state = sum(  # AdamW keeps two fp32 moments per trained value
            t.numel() * t.element_size()
            for u in trainer.policies.updates.values() for s in u.optimizer.state.values()
            for t in s.values() if hasattr(t, "numel") and t.dim() > 0
        )
    steps = [r.metrics for r in results.history]
    figures = {
        "side": side,
        "steps": results.steps,
        "seconds_per_step": statistics.median(m["seconds/step"] for m in steps),
        "seconds_per_update": statistics.median(m.get("seconds/update", 0.0) for m in steps),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "trained_parameters": sum(p.numel() for p in params),
        "optimizer_state_bytes": state,
        "heldout_before": results.baseline_pass_at_1,
        "heldout_after": results.heldout_pass_at_1,
    }
    before = figures["heldout_before"]
    figures["heldout_gain"] = None if before is None else figures["heldout_after"] - before
    out.write_text(json.dumps(figures) + "\n")
    return figures


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = _args(argv)
    if args.side != "both":
        if args.out is None:
            sys.exit("error: --side writes one side's figures to the file --out names")
        return _side(args, args.side, args.out)
    from coding_framework.training.run.setup import starting_model

    sides = {}
    with LoadMonitor() as load, tempfile.TemporaryDirectory() as tmp:
        for side in SIDES:  # one process each: peak RSS is per process
            out = Path(tmp) / f"{side}.json"
            cmd = [sys.executable, "-m", "benchmarks.training.lora_vs_full", "--side", side,
                   "--config", args.config, "--rank", str(args.rank), "--lora-lr", str(args.lora_lr),
                   "--out", str(out), "--override", *args.override]
            subprocess.run(cmd, cwd=ROOT, check=True)
            sides[side] = json.loads(out.read_text())
    result = {"config": args.config, "overrides": args.override, "lora_rank": args.rank,
              "lora_lr": args.lora_lr, "sides": sides}
    path = args.out or OUT
    base = starting_model(_config(args, "full"), progress=False).model_dir
    write_result(path, result, load, model_dir=base)
    _plot(result, path.with_suffix(".png"))
    print(json.dumps(result))
    return result


def _plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sides = result["sides"]
    panels = [("seconds_per_step", "s / step"), ("peak_rss_mib", "peak RSS (MiB)"),
              ("heldout_gain", "held-out pass@1 gain")]
    fig, axes = plt.subplots(1, 3, figsize=(9, 3))
    for ax, (key, label) in zip(axes, panels, strict=True):
        ax.bar(list(SIDES), [sides[s][key] or 0.0 for s in SIDES], color=["#4c72b0", "#dd8452"])
        ax.set_title(label)
    fig.suptitle(f"LoRA (r={result['lora_rank']}) vs full fine-tune, {result['config']}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
