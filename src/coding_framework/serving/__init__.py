"""The model server: versions, replica pools, OpenAI-compatible chat, /v1/solve, A/B tests and rollouts.

``create_app`` builds the FastAPI app (``coding-framework serve`` runs it under uvicorn); ``ServerThread``
runs it on a thread. See ``serving.rollout`` for experiments and rollouts.
"""

from coding_framework.serving.app import create_app
from coding_framework.serving.rollout import RolloutConflict, RolloutHooks, RolloutManager, Route
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
