"""A multi-node Ray cluster on one machine (``ray.cluster_utils.Cluster``) and a Tune callback that kills
the node of a trial once it has reported a checkpoint: the node-loss test and
``benchmarks/training/sweep_node_loss.py`` share them.

Trials reserve ``{"sweep_node": 1}``, which only the worker nodes have, so none runs on the head (the
driver's node, which cannot be removed).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import ray
from ray import tune
from ray.cluster_utils import Cluster

SWEEP_NODE = "sweep_node"
CHECKPOINT_KEY = "checkpoint_dir_name"  # Tune sets it in a result that came with a checkpoint
# The GCS marks a node dead after this many missed health checks of this period (Ray's defaults: 5 x 3 s).
FAST_HEALTH_CHECKS = {"health_check_initial_delay_ms": 0, "health_check_period_ms": 500,
                      "health_check_failure_threshold": 3}


@contextmanager
def ray_cluster(workers: int, cpus_per_worker: int = 1) -> Iterator[Cluster]:
    """A head node without CPUs and ``workers`` nodes of ``cpus_per_worker`` CPUs and as many
    ``sweep_node`` slots; the driver is connected to it, and everything is shut down after."""
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 0, "include_dashboard": False, "_system_config": FAST_HEALTH_CHECKS},
    )
    try:
        for _ in range(workers):
            cluster.add_node(num_cpus=cpus_per_worker, resources={SWEEP_NODE: cpus_per_worker})
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False, logging_level=logging.WARNING)
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


class KillNodeAfterCheckpoint(tune.Callback):
    """Removes the node of the ``victims`` first trials that report step ``after_step`` or later once they
    have reported a checkpoint, abruptly (``allow_graceful=False``: processes killed, as when a machine
    goes away). ``only``: trial id suffixes (``_00000``) of the trials that may be picked; empty: any."""

    def __init__(
        self, cluster: Cluster, after_step: int = 1, victims: int = 1, only: tuple[str, ...] = ()
    ) -> None:
        self.cluster, self.after_step, self.victims, self.only = cluster, after_step, victims, only
        self.checkpointed: dict[str, int] = {}  # trial id -> step of its newest reported checkpoint
        self.killed: list[dict[str, Any]] = []  # per kill: trial_id, node_id, step, checkpoint_step, at

    def __getstate__(self) -> dict[str, Any]:
        # Tune pickles its callbacks with the run config; the cluster's processes stay here.
        return {k: v for k, v in self.__dict__.items() if k != "cluster"}

    def on_trial_result(
        self, iteration: int, trials: list[Any], trial: Any, result: dict[str, Any], **info: Any
    ) -> None:
        if result.get(CHECKPOINT_KEY):
            self.checkpointed[trial.trial_id] = result["step"]
        if len(self.killed) >= self.victims or trial.trial_id not in self.checkpointed:
            return
        if result["step"] < self.after_step or trial.trial_id in {k["trial_id"] for k in self.killed}:
            return
        if self.only and not trial.trial_id.endswith(self.only):
            return
        node_id = result["node_id"]
        if node_id in {k["node_id"] for k in self.killed}:
            return
        node = next(n for n in self.cluster.worker_nodes if n.node_id == node_id)
        self.cluster.remove_node(node, allow_graceful=False)
        self.killed.append({"trial_id": trial.trial_id, "node_id": node_id, "step": result["step"],
                            "checkpoint_step": self.checkpointed[trial.trial_id], "at": time.time()})
