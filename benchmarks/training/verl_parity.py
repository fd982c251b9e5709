"""Parity of verl's trainer on CPU with the local trainer (issue 34), and a real model through verl on CPU.

Reproduce (about 35 minutes on 2 loaded cores; one training process at a time):
    python -m benchmarks.training.verl_parity                    # 3 seeds x {local, verl}, then summarize
    python -m benchmarks.training.verl_parity --summarize-only   # the run dirs already there
    python -m benchmarks.training.verl_parity --real-model       # smollm2-135m with LoRA through verl-train

Parity: for each seed the shipped ``verl_parity`` config (the embedded model, GRPO, lr 3e-4, 4 steps of 4
problems x 4 samples, a 0.001 low-var-KL loss to the reference) with that seed is written to
``<runs>/configs/seed<S>.yaml`` and trained twice, by ``coding-framework train`` and by
``coding-framework verl-train`` (verl's FSDP2 trainer on CPU with the token-server rollout), into
``<runs>/{local,verl}-seed<S>``.
A run dir that already holds ``results.json`` is summarized, not trained again. Per step: the mean episode
reward (ours ``reward_mean``, verl ``critic/score/mean``), the KL loss to the reference (ours ``kl/loss``,
verl ``actor/kl_loss``: the same low-var-KL estimator aggregated by the same ``loss_agg_mode`` over the
update's micro-batches), the gradient norm before clipping (ours ``charts/grad_norm``, verl
``actor/grad_norm``); per run the gate's held-out pass@1 before and after. Figures and ``explanations`` go
to benchmarks/results/verl_parity.json, the plot to verl_parity.png.

Real model: ``verl-train`` with ``--model smollm2-135m`` and a copy of ``verl_cpu`` with ``policies:
shared_lora`` (2 steps of 2 problems x 4 samples, one 64-token round, entropy bonus 0.01) and of
``verl_fsdp_cpu`` with micro-batches of 1 row, its peak memory the summed RSS of the whole process tree
(sampled every second); to benchmarks/results/verl_real_model.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from benchmarks.harness import LoadMonitor, write_result

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
CONFIGS = ROOT / "src" / "coding_framework" / "configs"
BACKENDS = ("local", "verl")
# figure -> (local trainer's key, verl's key) in results.json's per-step history
METRICS = {
    "reward_mean": ("reward_mean", "critic/score/mean"),
    "kl_loss": ("kl/loss", "actor/kl_loss"),
    "grad_norm": ("charts/grad_norm", "actor/grad_norm"),
    "pg_loss": ("losses/pg_loss", "actor/pg_loss"),
    "approx_kl_old_new": ("losses/approx_kl", "actor/ppo_kl"),
}

EXPLANATIONS = {
    "sampling": (
        "Neither side draws the same samples, so per-step figures agree in distribution, not in value. "
        "Problems: the local trainer draws problems_per_step without replacement through seeded shuffles "
        "of the pool (schedule.ProblemSampler, seed = the run seed); verl shuffles the same train set "
        "(verl_data/train.parquet) with a torch RandomSampler seeded by data.seed (= the run seed), a "
        "different permutation of the same problems. Tokens: the local trainer decodes each step's episodes "
        "in lockstep waves (rollout.LockstepEngine) whose sampling seed is derive_seed(seed, wave, n) with "
        "per-row streams (LocalEngine.row_seed), so `train --seed S` repeats itself exactly. verl's agent "
        "loop passes no seed in its sampling params, so the token server's LocalEngine takes each call's "
        "seed from its process's torch RNG (LocalEngine._base_seed: torch.randint) in the order the "
        "concurrent agent-loop calls arrive: verl runs of one seed are not reproducible, and differ from "
        "the local run already at step 1. Both sample at temperature 1.0, top_p 1.0, and record the raw "
        "temperature-1 logprobs that the update takes as old logprobs."
    ),
    "batching": (
        "One optimizer step per step on both sides over the same 16 episodes: ours algo.minibatches=1, "
        "epochs=1, micro-batches of optim.micro_batch_size=4 rows sorted by prompt; verl ppo_mini_batch_size="
        "problems_per_step (x rollout.n = 16 rows), ppo_epochs=1, ppo_micro_batch_size_per_gpu=4 from "
        "verl_fsdp_cpu, rows in verl's order after balance_batch, padding removed (left_right_2_no_padding). "
        "A multi-round episode is one row on both sides (the Generator's tokens masked in, feedback masked "
        "out). The grouping into micro-batches changes only the float summation order. Gradient clipping at "
        "1.0 on both (optim.grad_clip -> actor.optim.clip_grad); both report the norm before clipping."
    ),
    "loss_aggregation": (
        "GRPO's loss_agg_mode is seq-mean-token-mean on both sides (AlgorithmSpec.loss_agg_mode -> "
        "actor.loss_agg_mode), computed by the same verl core_algos.agg_loss. verl's FSDP engine passes "
        "global_batch_size = ppo_mini_batch_size x n = 16 to every micro-batch (ray_trainer._update_actor), "
        "so each micro-batch contributes sum(per-row token means)/16 and the accumulated gradient is the "
        "mean over the 16 rows; ours calls agg_loss per micro-batch without global info (mean over its 4 "
        "rows) and weights it by rows/mini-batch rows = 4/16 (update._micro_weight): the same gradient. "
        "The KL loss (low_var_kl, coef 0.001) is aggregated the same way on both sides, against a "
        "reference that is the starting model (ours ReferencePolicy copy, verl's ref worker). The policy "
        "loss is verl's vanilla clipped PG on both sides (clip 0.2/0.2 from the GRPO spec) and GRPO "
        "advantages normalize by the group's std on both (norm_adv_by_std_in_grpo)."
    ),
    "kl_reported": (
        "kl_loss is ours `kl/loss` vs verl's `actor/kl_loss`: the per-token low-var-KL of the policy being "
        "updated (before the optimizer step, so the rollout policy) to the reference, aggregated by "
        "loss_agg_mode; it grows as the policy moves. At step 1 (policy = reference) ours is exactly 0 (the "
        "reference is a copy scored by the same code). verl's was 2.9e-5 in seed 0: its reference worker "
        "ran in bf16 parameters (verl's default mixed precision for a ref fsdp_config section we did not "
        "set) against the fp32 actor; the mapping now gives the reference the actor's precision "
        "(overrides._fsdp), which seeds 1 and 2 ran with. "
        "approx_kl_old_new is the PPO ratio KL (ours losses/approx_kl, verl actor/ppo_kl), ~0 with one "
        "on-policy optimizer step: it measures the rollout/trainer logprob mismatch only."
    ),
    "held_out": (
        "The held-out gain is the gate's greedy pass@1 before and after on the same 10 held-out problems "
        "with the same evaluation code (training.heldout.evaluate_heldout through the LocalEngine, seed "
        "derive_seed(seed, 'eval')) on both sides; the final models differ because their samples differed."
    ),
    "precision": (
        "Both train in float32 on the CPU. verl's final model is its FSDP checkpoint at training precision "
        "(export.save_full_precision); ours is the trainer's model. verl's FSDP recompute of the rollout "
        "logprobs differs from the token server's by <= 1e-5 (training/rollout_probs_diff_max)."
    ),
}


def _args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--runs", type=Path, default=ROOT / "runs" / "verl_parity", help="run dirs go here")
    ap.add_argument("--config", default="verl_parity", help="shipped training config (or a path)")
    ap.add_argument("--summarize-only", action="store_true", help="train nothing; summarize the run dirs")
    ap.add_argument("--real-model", action="store_true", help="the smollm2-135m LoRA step instead")
    ap.add_argument("--out", type=Path, default=RESULTS / "verl_parity.json")
    ap.add_argument("--real-out", type=Path, default=RESULTS / "verl_real_model.json")
    return ap.parse_args(argv)


def _cli() -> list[str]:
    return [sys.executable, "-m", "coding_framework.cli"]


def _config_file(args: argparse.Namespace, seed: int) -> Path:
    source = Path(args.config) if Path(args.config).suffix else CONFIGS / f"{args.config}.yaml"
    data = yaml.safe_load(source.read_text())
    data["seed"] = seed
    out = args.runs / "configs" / f"seed{seed}.yaml"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    return out


def _command(backend: str, config: Path, run_dir: Path) -> list[str]:
    verb = "train" if backend == "local" else "verl-train"
    return ["coding-framework", verb, "--config", str(config), "--run-dir", str(run_dir)]


def tree_rss(root: int) -> int:
    """The summed RSS (bytes) of process ``root`` and all its descendants, from /proc (shared pages count
    once per process)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(stat.parent.name))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        try:
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            continue
    return total


class PeakRSS:
    """``tree_rss(pid)`` sampled every ``interval_s`` on a thread; ``stop()`` returns the peak (bytes)."""

    def __init__(self, pid: int, interval_s: float = 1.0) -> None:
        self.pid, self.interval_s, self.peak = pid, interval_s, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.peak = max(self.peak, tree_rss(self.pid))

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


def _train(command: list[str], run_dir: Path) -> dict[str, Any]:
    """Run ``command`` (stderr to ``<run_dir>.stderr``); its wall time, peak tree RSS and last stdout line."""
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    with open(f"{run_dir}.stderr", "w") as err:
        proc = subprocess.Popen([*_cli(), *command[1:]], stdout=subprocess.PIPE, stderr=err, text=True,
                                cwd=ROOT)
        rss = PeakRSS(proc.pid)
        stdout, _ = proc.communicate()
        peak = rss.stop()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed with code {proc.returncode}: see {run_dir}.stderr")
    run = {"wall_s": round(time.perf_counter() - began, 1), "peak_tree_rss_gb": round(peak / 1e9, 2),
           "last_line": json.loads(stdout.strip().splitlines()[-1])}
    (run_dir / "benchmark_run.json").write_text(json.dumps(run, indent=2) + "\n")
    return run


def _summary(backend: str, run_dir: Path, command: list[str]) -> dict[str, Any]:
    results = json.loads((run_dir / "results.json").read_text())
    history = sorted((r for r in results["history"] if r["step"] > 0), key=lambda r: r["step"])
    column = 0 if backend == "local" else 1
    per_step = {name: [r["metrics"].get(keys[column]) for r in history] for name, keys in METRICS.items()}
    out: dict[str, Any] = {
        "command": " ".join(command),
        "steps": results["steps"],
        "heldout_problems": results["heldout_problems"],
        "heldout_pass@1": {"before": results["baseline_pass_at_1"], "after": results["heldout_pass_at_1"],
                           "gain": results["heldout_pass_at_1"] - results["baseline_pass_at_1"]},
        "gate_passed": (results.get("gate") or {}).get("passed"),
        "seconds": round(results["seconds"], 1),
        "per_step": per_step,
        "metric_keys": {name: keys[column] for name, keys in METRICS.items()},
    }
    if backend == "verl":
        out["per_step"]["step_seconds"] = [r["metrics"].get("timing_s/step") for r in history]
        out["per_step"]["trainer_rollout_logprob_diff_max"] = [
            r["metrics"].get("training/rollout_probs_diff_max") for r in history]
        out["audit"] = results.get("audit")
    bench = run_dir / "benchmark_run.json"
    if bench.is_file():
        out.update({k: v for k, v in json.loads(bench.read_text()).items() if k != "last_line"})
    return out


def _mean_range(values: list[float | None]) -> dict[str, float | None]:
    got = [v for v in values if v is not None]
    if not got:
        return {"mean": None, "min": None, "max": None}
    return {"mean": round(statistics.fmean(got), 5), "min": min(got), "max": max(got)}


def _aggregate(runs: dict[str, dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """Per backend, per metric, per step: mean and range over seeds; and the held-out gains."""
    out: dict[str, Any] = {}
    for backend in BACKENDS:
        seeds = [runs[s][backend] for s in sorted(runs)]
        steps = min(len(r["per_step"]["reward_mean"]) for r in seeds)
        out[backend] = {
            name: [_mean_range([r["per_step"][name][i] for r in seeds]) for i in range(steps)]
            for name in METRICS
        }
        out[backend]["heldout_gain"] = _mean_range([r["heldout_pass@1"]["gain"] for r in seeds])
        out[backend]["heldout_before"] = _mean_range([r["heldout_pass@1"]["before"] for r in seeds])
        out[backend]["heldout_after"] = _mean_range([r["heldout_pass@1"]["after"] for r in seeds])
    return out


def _observed(runs: dict[str, dict[str, dict[str, Any]]], aggregate: dict[str, Any]) -> str:
    """What the figures show, in words, from the figures themselves."""
    def norms(flat: bool) -> list[float]:
        return [g for seed in runs.values() for b in BACKENDS
                for r, g in zip(seed[b]["per_step"]["reward_mean"], seed[b]["per_step"]["grad_norm"],
                                strict=True)
                if g is not None and r is not None and (r == 0) == flat]

    flat, moving = norms(True), norms(False)
    steps = len(next(iter(runs.values()))["local"]["per_step"]["reward_mean"])
    problems = next(iter(runs.values()))["local"]["heldout_problems"]
    gain = {b: aggregate[b]["heldout_gain"] for b in BACKENDS}
    ranges = {b: f"{g['mean']:.2f} (seeds {g['min']:.1f}-{g['max']:.1f})" for b, g in gain.items()}
    return (
        f"Steps whose 16 episodes all earned 0 have every GRPO advantage 0, so the gradient is the KL "
        f"loss's alone: norm {min(flat):.1e}-{max(flat):.1e} on both sides; other steps "
        f"{min(moving):.2f}-{max(moving):.2f} on both. The KL loss grows from 0 by about the same amount "
        f"per step on both sides. Held-out gain after {steps} steps: local {ranges['local']}, verl "
        f"{ranges['verl']} on {problems} held-out problems, where one problem is {1 / problems:.1f}: the "
        f"seeds' ranges overlap, and each run's own samples (see sampling) decide which problems its "
        f"update saw pass."
    )


def _plot(runs: dict[str, dict[str, dict[str, Any]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = (("reward_mean", "mean episode reward"), ("kl_loss", "KL loss to the reference (low-var-KL)"),
              ("grad_norm", "gradient norm (before clipping)"))
    colors = {"local": "tab:blue", "verl": "tab:orange"}
    styles = ("-", "--", ":")
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for ax, (name, title) in zip(axes, panels, strict=True):
        for backend in BACKENDS:
            for i, seed in enumerate(sorted(runs)):
                values = runs[seed][backend]["per_step"][name]
                steps = [s + 1 for s, v in enumerate(values) if v is not None]
                label = f"{'local trainer' if backend == 'local' else 'verl (CPU)'} seed {seed}"
                ax.plot(steps, [v for v in values if v is not None], styles[i % 3], marker="o",
                        color=colors[backend], label=label, alpha=0.85)
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.set_xticks(range(1, 1 + max(len(r[b]["per_step"][name]) for r in runs.values() for b in BACKENDS)))
        if name == "grad_norm":  # a step whose episodes all earn 0 has only the KL loss's ~1e-4 gradient
            ax.set_yscale("log")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle("GRPO on the embedded model: local trainer vs verl's FSDP2 trainer on CPU (same config, "
                 "3 seeds)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def parity(args: argparse.Namespace) -> Path:
    runs: dict[str, dict[str, dict[str, Any]]] = {}
    with LoadMonitor() as load:
        for seed in args.seeds:
            config = _config_file(args, seed)
            for backend in BACKENDS:
                run_dir = args.runs / f"{backend}-seed{seed}"
                command = _command(backend, config, run_dir)
                if not (run_dir / "results.json").is_file():
                    if args.summarize_only:
                        raise SystemExit(f"{run_dir} holds no results.json: run without --summarize-only")
                    print(f"training: {' '.join(command)}", file=sys.stderr, flush=True)
                    _train(command, run_dir)
                runs.setdefault(str(seed), {})[backend] = _summary(backend, run_dir, command)
    aggregate = _aggregate(runs)
    png = args.out.with_suffix(".png")
    _plot(runs, png)
    figures = {
        "config": args.config,
        "seeds": args.seeds,
        "metric_keys": {name: {"local": k[0], "verl": k[1]} for name, k in METRICS.items()},
        "runs": runs,
        "aggregate": aggregate,
        "explanations": {**EXPLANATIONS, "observed": _observed(runs, aggregate)},
        "plot": str(png.relative_to(ROOT)) if png.is_relative_to(ROOT) else str(png),
    }
    from coding_framework.config import load_config
    from coding_framework.config.training import TrainingConfig
    from coding_framework.training.run.setup import starting_model

    start = starting_model(load_config(TrainingConfig, str(_config_file(args, args.seeds[0])), {}),
                           progress=False)
    return write_result(args.out, figures, load, model_dir=start.model_dir)


def real_model(args: argparse.Namespace) -> Path:
    from coding_framework.models import resolve_model

    data = yaml.safe_load((CONFIGS / "verl_cpu.yaml").read_text())
    verl = yaml.safe_load((CONFIGS / "verl_fsdp_cpu.yaml").read_text())
    # one row per forward: a 49k-token vocabulary's logits over a micro-batch of 4 did not fit beside the
    # machine's other jobs (Ray's memory monitor killed the actor in its update)
    verl["fsdp"].update(micro_batch_size_per_gpu=1, log_prob_micro_batch_size_per_gpu=1)
    verl["rollout"].update(response_length=128)
    data.update(steps=2, model="smollm2-135m",
                policies={"mode": "shared_lora", "roles": ["generator"], "rank": 8, "alpha": 16},
                checkpoint={"every": 1, "keep_last": 1})
    data["data"]["heldout_limit"] = 4
    # step 2 samples from (and the audit checks) the adapter step 1 trained, merged by the token server;
    # a group whose samples all pass or all fail has no advantage, and a 1-step run of 2 x 2 samples
    # trained nothing: 4 samples per problem, and a small entropy bonus so that the step moves the adapter
    data["rollout"].update(problems_per_step=2, group_size=4, max_new_tokens=64)
    data["algo"] = {"entropy_coef": 0.01}
    data["workflow"]["graph"]["max_rounds"] = 1  # one 64-token attempt: the response fits verl's 128
    data["eval"].update(max_new_tokens=64)
    data["optim"].update(lr=1e-3)  # a zero-initialised lora_B needs a larger step than a full fine-tune
    run_dir = args.runs.parent / "verl_real_model"
    config = args.runs.parent / "verl_real_model.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    verl_config = config.with_name("verl_real_model_fsdp.yaml")
    verl_config.write_text(yaml.safe_dump(verl, sort_keys=False))
    command = ["coding-framework", "verl-train", "--config", str(config), "--verl-config", str(verl_config),
               "--run-dir", str(run_dir)]
    with LoadMonitor() as load:
        if (run_dir / "results.json").is_file() and (run_dir / "benchmark_run.json").is_file():
            run = json.loads((run_dir / "benchmark_run.json").read_text())
        else:
            run = _train(command, run_dir)
    results = json.loads((run_dir / "results.json").read_text())
    last = run["last_line"]
    history = [r for r in results["history"] if r["step"] > 0]
    figures = {
        "model": "smollm2-135m",
        "policies": data["policies"],
        "config": data,
        "verl_config": verl,
        "train_command": " ".join(command),
        "wall_s": run["wall_s"],
        "step_seconds": [r["metrics"].get("timing_s/step") for r in history],
        "peak_tree_rss_gb": run["peak_tree_rss_gb"],
        "weights_changed": last.get("weights_changed"),
        "weights_max_abs_change": last.get("weights_max_abs_change"),
        "audit_offending_tokens": last.get("audit_offending_tokens"),
        "audit_checked_tokens": last.get("audit_checked_tokens"),
        "trainer_rollout_logprob_diff_max": last.get("trainer_rollout_logprob_diff_max"),
        "gate": last.get("gate"),
        "challenger": last.get("challenger"),
        "heldout_pass@1": {"before": results["baseline_pass_at_1"], "after": results["heldout_pass_at_1"],
                           "problems": results["heldout_problems"]},
        "last_line": last,
    }
    return write_result(args.real_out, figures, load, model_dir=resolve_model("smollm2-135m").model_dir)


def main(argv: list[str] | None = None) -> None:
    args = _args(argv)
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    out = real_model(args) if args.real_model else parity(args)
    print(json.dumps({"result": str(out)}))


if __name__ == "__main__":
    main()
