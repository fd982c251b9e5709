"""A Ray Tune sweep that loses worker nodes mid-run and still completes: the lost trials resume from their
last reported checkpoint on the surviving node.

Reproduce:  .venv/bin/python -m benchmarks.training.sweep_node_loss

One machine plays the cluster (``ray.cluster_utils.Cluster``): a head node without CPUs and ``--workers``
worker nodes of one CPU, the only ones with the ``sweep_node`` resource each trial reserves. The sweep
trains the tests' tiny model: a grid of learning rates, each run twice (``num_samples 2``, same seed,
so the two runs of a value are the same run). Once a trial of the first sample has reported a checkpoint
and then step ``--kill-after-step``, its node is killed (``remove_node(allow_graceful=False)``), up to
``--kills`` nodes; the steps after the checkpoint are lost and trained again. The second sample of each
value is never killed: every per-step metric value the killed trial reported is compared with its twin's
at that step, which shows the resume continued the same run.

Recorded: the kills (trial, node, the step reported last and the newest checkpoint's step), per trial the
nodes it ran on, its failures, the step it resumed from, the steps it reported to Tune (a redone step
twice), the steps trained twice (logged to MLflow on the lost node and again after the restart), whether
its values equal its twin's, and the best trial.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml
from ray import tune

from benchmarks.harness import RESULTS, LoadMonitor, write_result
from coding_framework.config.sweep import load_sweep
from coding_framework.testing.ray_cluster import SWEEP_NODE, KillNodeAfterCheckpoint, ray_cluster
from coding_framework.testing.tiny_run import tiny_config
from coding_framework.training.sweep import run_sweep

OUT = RESULTS / "sweep_node_loss.json"
METRIC = "losses/entropy"


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=3, help="worker nodes (one CPU each)")
    ap.add_argument("--kills", type=int, default=2, help="worker nodes killed, each under a different trial")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--checkpoint-every", type=int, default=2)
    ap.add_argument("--kill-after-step", type=int, default=3,
                    help="kill a trial's node once it reported this step (and some checkpoint before)")
    ap.add_argument("--lrs", type=float, nargs="+", default=[0.003, 0.03])
    ap.add_argument("--max-failures", type=int, default=2)
    ap.add_argument("--out", type=Path, default=OUT)
    return ap.parse_args()


class Narrator(tune.Callback):
    """One line per result and per restart on stderr; ``names`` turns node ids into worker names."""

    def __init__(self, names: dict[str, str], start: float) -> None:
        self.names, self.start = names, start

    def _say(self, line: str) -> None:
        print(f"[{time.time() - self.start:6.1f}s] {line}", file=sys.stderr, flush=True)

    def on_trial_result(
        self, iteration: int, trials: list[Any], trial: Any, result: dict[str, Any], **info: Any
    ) -> None:
        node = self.names.get(result.get("node_id", ""), "?")
        ckpt = " +checkpoint" if result.get("checkpoint_dir_name") else ""
        resumed = result.get("resumed_from_step")
        resumed = "" if resumed is None else f" (resumed from step {resumed})"
        self._say(f"{trial.trial_id} step {result.get('step')} on {node}{ckpt}{resumed}")

    def on_trial_recover(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        self._say(f"{trial.trial_id} failed (its node was lost); Tune restarts it from its checkpoint")

    def on_trial_complete(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        self._say(f"{trial.trial_id} completed")


def _redone_steps(uri: str, run_id: str | None) -> list[int]:
    """Steps the trainer logged to MLflow more than once (trained on the lost node, then again)."""
    if run_id is None:
        return []
    from mlflow.tracking import MlflowClient

    counts = Counter(m.step for m in MlflowClient(uri).get_metric_history(run_id, METRIC))
    return sorted(step for step, n in counts.items() if n > 1)


def _same_values(curve: list[list[float]], twin: list[list[float]]) -> bool:
    """Whether every [step, value] of ``curve`` (a redone step is in it twice) is the twin's at that step."""
    at = {step: value for step, value in twin}
    return all(at.get(step) == value for step, value in curve) and {s for s, _ in curve} == set(at)


def main() -> None:
    args = _args()
    tmp = Path(tempfile.mkdtemp(prefix="sweep-node-loss-"))
    tiny_config(
        tmp,
        steps=args.steps,
        checkpoint={"every": args.checkpoint_every, "keep_last": 2},
        eval={"max_new_tokens": 12, "baseline": False},
        audit={"every": 0},
        tracking={"registered_model": None, "log_checkpoints": False},
    )
    sweep = {
        "base": "tiny.yaml",
        "search_space": {"optim.lr": {"type": "grid", "values": args.lrs}},
        "metric": METRIC,
        "mode": "max",
        "num_samples": 2,
        "asha": {"enabled": False},
        "max_concurrent_trials": args.workers,
        "trial_resources": {SWEEP_NODE: 1},
        "max_failures": args.max_failures,
    }
    (tmp / "sweep.yaml").write_text(yaml.safe_dump(sweep))
    config, base = load_sweep(tmp / "sweep.yaml")
    first_sample = tuple(f"_{i:05d}" for i in range(len(args.lrs)))  # Tune numbers the grid's trials
    start = time.time()
    with LoadMonitor() as load, ray_cluster(workers=args.workers) as cluster:
        names = {n.node_id: f"worker-{i + 1}" for i, n in enumerate(cluster.worker_nodes)}
        print(f"cluster up: head (0 CPUs) + {', '.join(names.values())}", file=sys.stderr, flush=True)
        killer = KillNodeAfterCheckpoint(cluster, args.kill_after_step, args.kills, only=first_sample)
        results = run_sweep(config, base, tmp / "sweep", progress=False,
                            callbacks=[killer, Narrator(names, start)])
    wall = time.time() - start

    trials = sorted(results.trials, key=lambda t: t["trial_id"])
    killed_ids = {k["trial_id"] for k in killer.killed}
    per_trial = []
    for t in trials:
        twin = next((o for o in trials if o is not t and o["params"] == t["params"]
                     and o["trial_id"] not in killed_ids), None)
        per_trial.append({
            "trial_id": t["trial_id"],
            "lr": t["params"]["optim.lr"],
            "status": t["status"],
            "steps": t["steps"],
            "nodes": [names.get(n, n) for n in t["nodes"]],
            "failures": t["failures"],
            "resumed_from_step": t["resumed_from"],
            "redone_steps": _redone_steps(results.mlflow_uri, t["mlflow_run_id"]),
            "steps_reported": [s for s, _ in t["curve"]],
            METRIC: t["metric"],
            "values_equal_unkilled_twin": _same_values(t["curve"], twin["curve"])
            if t["trial_id"] in killed_ids and twin else None,
        })
    best = results.best or {}
    figures = {
        "what": "a Ray Tune sweep of the trainer on a head + worker-node Ray cluster (one machine) losing "
                "worker nodes mid-run; lost trials restarted from their last reported checkpoint",
        "cluster": {"head": "0 CPUs, no sweep_node", "workers": args.workers, "cpus_per_worker": 1},
        "sweep": {"trials": len(trials), "steps": args.steps, "checkpoint_every": args.checkpoint_every,
                  "kill_after_step": args.kill_after_step,
                  "max_failures": args.max_failures, "metric": METRIC, "mode": "max", "lrs": args.lrs,
                  "model": "tests' tiny random Qwen2 (src/coding_framework/testing/models.py)"},
        "kills": [{"trial_id": k["trial_id"], "node": names[k["node_id"]],
                   "after_step": k["step"], "last_checkpoint_reported": k["checkpoint_step"],
                   "at_s": round(k["at"] - start, 1)}
                  for k in killer.killed],
        "moved": [{"trial_id": p["trial_id"], "from": p["nodes"][0], "to": p["nodes"][1:],
                   "resumed_from_step": p["resumed_from_step"], "failures": p["failures"],
                   "redone_steps": p["redone_steps"], "steps_reported": p["steps_reported"],
                   "values_equal_unkilled_twin": p["values_equal_unkilled_twin"]}
                  for p in per_trial if p["trial_id"] in killed_ids],
        "per_trial": per_trial,
        "completed": sum(t["status"] == "completed" for t in trials),
        "best": {"trial_id": best.get("trial_id"), "params": best.get("params"), METRIC: best.get("metric")},
        "seconds": {"wall": round(wall, 1), "sweep": round(results.seconds, 1)},
    }
    out = write_result(args.out, figures, load, model_dir=tmp / "tiny-model")
    print(yaml.safe_dump({k: figures[k] for k in ("kills", "moved", "completed", "best", "seconds")},
                         sort_keys=False), file=sys.stderr)
    print(out)


if __name__ == "__main__":
    main()
