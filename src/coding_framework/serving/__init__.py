"""The model server: versions, replica pools, OpenAI-compatible chat, /v1/solve, A/B tests and rollouts.

``create_app`` builds the FastAPI app (``coding-framework serve`` runs it under uvicorn); ``ServerThread``
runs it on a thread. See ``serving.rollouts`` for experiments and rollouts.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from coding_framework.serving.app import create_app
    from coding_framework.serving.rollouts.manager import RolloutConflict, RolloutHooks, RolloutManager, Route
    from coding_framework.serving.server import ServerThread, run_server

__all__ = [
    "RolloutConflict",
    "RolloutHooks",
    "RolloutManager",
    "Route",
    "ServerThread",
    "create_app",
    "run_server",
]

# The exports load on first use, so `coding-framework deploy` reads the rollout API's models
# (`rollouts.api`) without importing the server's stack (FastAPI, agents, graphs: seconds).
_HOMES = {
    "RolloutConflict": "rollouts.manager",
    "RolloutHooks": "rollouts.manager",
    "RolloutManager": "rollouts.manager",
    "Route": "rollouts.manager",
    "ServerThread": "server",
    "create_app": "app",
    "run_server": "server",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
