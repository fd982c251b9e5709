"""RL training: the trainer and its config, token-exact trajectories, verl interop, algorithm specs and
losses, the critic's value head, KL, the auditor, Ray Tune sweeps.

Names from modules that import verl or transformers (slow to import: ray, hydra, vLLM glue) load on first
access, so ``import coding_framework.training`` stays cheap for code that only needs trajectories.
"""

from __future__ import annotations

import importlib
from typing import Any

from coding_framework.config.algorithm import AlgorithmOverrides
from coding_framework.config.kl import KLConfig
from coding_framework.config.training import TrainingConfig
from coding_framework.training.algos.algorithms import (
    ALGORITHMS,
    AlgorithmSpec,
    get_algorithm,
    register_algorithm,
)
from coding_framework.training.algos.value_head import ValueHead
from coding_framework.training.auditor import AuditIssue, AuditReport, audit
from coding_framework.training.run.results import StepRecord, TrainingResults
from coding_framework.training.trajectory import CallSpan, Trajectory, from_records, trajectories_from_episode

_LAZY = {
    "Trainer": "trainer", "configure": "run.setup", "RunScope": "run.scope",
    "compute_advantages": "algos.losses", "policy_loss": "algos.losses", "value_loss": "algos.losses",
    "dynamic_sampling_filter": "algos.losses", "rows_for_update": "algos.losses",
    "to_agent_loop_output": "verl.interop", "from_agent_loop_output": "verl.interop",
    "to_data_proto": "verl.interop", "from_data_proto": "verl.interop",
    "KLMonitor": "algos.kl", "ReferencePolicy": "algos.kl", "kl_in_reward": "algos.kl", "kl_loss": "algos.kl",
    "make_controller": "algos.kl", "response_log_probs": "algos.kl",
    "CodingAgentLoop": "verl.agent_loop", "ServerManagerEngine": "verl.agent_loop",
    "verl_dataset_rows": "verl.agent_loop", "write_verl_dataset": "verl.agent_loop",
    "load_sweep": "sweep", "run_sweep": "sweep",
    "GeneratorModel": "run.pyfunc",  # registered models load it by this path (run/pyfunc.py's LOADER)
}

__all__ = [
    "ALGORITHMS", "AlgorithmOverrides", "AlgorithmSpec", "AuditIssue", "AuditReport", "CallSpan",
    "CodingAgentLoop", "GeneratorModel", "KLConfig", "KLMonitor", "ReferencePolicy", "RunScope",
    "ServerManagerEngine", "StepRecord", "Trainer", "TrainingConfig", "TrainingResults", "Trajectory",
    "ValueHead", "audit", "compute_advantages", "configure", "dynamic_sampling_filter",
    "from_agent_loop_output", "from_data_proto", "from_records", "get_algorithm", "kl_in_reward", "kl_loss",
    "load_sweep", "make_controller", "policy_loss", "register_algorithm", "response_log_probs",
    "rows_for_update", "run_sweep", "to_agent_loop_output", "to_data_proto", "trajectories_from_episode",
    "value_loss", "verl_dataset_rows", "write_verl_dataset",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"coding_framework.training.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
