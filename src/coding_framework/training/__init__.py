"""RL training: token-exact trajectories, verl interop, algorithm specs and losses, critic, KL, auditor.

Names from modules that import verl (slow to import: ray, hydra, vLLM glue) load on first access, so
``import coding_framework.training`` stays cheap for code that only needs trajectories.
"""

from __future__ import annotations

import importlib
from typing import Any

from coding_framework.training.algorithms import ALGORITHMS, AlgorithmSpec, get_algorithm, register_algorithm
from coding_framework.training.trajectory import CallSpan, Trajectory, from_records, trajectories_from_episode

_LAZY = {
    "compute_advantages": "losses", "policy_loss": "losses", "value_loss": "losses",
    "dynamic_sampling_filter": "losses", "rows_for_update": "losses",
    "to_agent_loop_output": "verl_interop", "from_agent_loop_output": "verl_interop",
    "to_data_proto": "verl_interop", "from_data_proto": "verl_interop",
}

__all__ = [
    "ALGORITHMS", "AlgorithmSpec", "CallSpan", "Trajectory", "compute_advantages", "dynamic_sampling_filter",
    "from_agent_loop_output", "from_data_proto", "from_records", "get_algorithm", "policy_loss", "register_algorithm",
    "rows_for_update", "to_agent_loop_output", "to_data_proto", "trajectories_from_episode", "value_loss",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"coding_framework.training.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
