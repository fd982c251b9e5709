"""What several commands share: the workflow and sandbox configs from flags, the model flag, key variables."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast, get_args

from coding_framework.cli.output import fail
from coding_framework.config.model_ref import MODEL_HELP, ModelRef, parse_model_ref

if TYPE_CHECKING:
    from coding_framework.config import SandboxConfig
    from coding_framework.config.graph import WorkflowConfig
    from coding_framework.models import ResolvedModel

__all__ = [
    "ADMIN_KEY_ENV", "API_KEY_ENV", "MODEL_HELP", "model_flag", "resolved_or_fail", "sandbox_settings",
    "workflow_config",
]

API_KEY_ENV = "CODING_FRAMEWORK_API_KEY"
ADMIN_KEY_ENV = "CODING_FRAMEWORK_ADMIN_KEY"


def model_flag(spec: str) -> ModelRef:
    """``--model SPEC`` parsed, or exit 2 with one line naming the spec and the accepted forms."""
    try:
        return parse_model_ref(spec)
    except ValueError as exc:
        fail(str(exc))


def resolved_or_fail(ref: ModelRef, *, registry_uri: str | None = None,
                     cache_dir: Path | None = None) -> ResolvedModel:
    """``ref`` resolved (the embedded model built, a registry version downloaded and attested) before any
    work starts, or exit 2 with one line."""
    from coding_framework.models import resolve_model

    try:
        return resolve_model(ref, registry_uri=registry_uri, cache_dir=cache_dir, progress=True)
    except ValueError as exc:
        fail(str(exc))


def workflow_config(
    agents: str | None = None,
    graph: str | None = None,
    sandbox: str | None = None,
    *,
    model: ModelRef | None = None,
    reviewer: str | None = None,
    max_rounds: int | None = None,
    checkpoint_db: Path | None = None,
) -> WorkflowConfig:
    """The workflow from three YAMLs (paths or shipped names; unset: the shipped `agents`, `graph` and
    `sandbox` configs), then the flags the user gave."""
    from coding_framework.config.agents import ReviewerBackend
    from coding_framework.config.graph import WorkflowConfig

    config = WorkflowConfig.load(agents, graph, sandbox)
    if model is not None:
        config.agents.model = model
        config.agents.generator.model = config.agents.reviewer.model = None
    if reviewer is not None:
        if reviewer not in get_args(ReviewerBackend):
            raise ValueError(f"--reviewer must be static, llm or none, not {reviewer!r}")
        config.agents.reviewer.backend = cast(ReviewerBackend, reviewer)
    if max_rounds is not None:
        config.graph.max_rounds = max_rounds
    if checkpoint_db is not None:
        config.graph.checkpoint_db = checkpoint_db
    return config


def sandbox_settings(
    path: str | None,
    *,
    timeout: float | None = None,
    workers: int | None = None,
    backend: str | None = None,
) -> SandboxConfig:
    """The sandbox YAML (a path or a shipped name; unset: the shipped `sandbox`), then the flags given.

    ``timeout`` sets both tiers' per-sample budget: the judge's and the in-process (BigCodeBench) one.
    """
    from coding_framework.config import SandboxConfig, load_config, shipped_config

    return load_config(
        SandboxConfig,
        path if path is not None else shipped_config("sandbox"),
        overrides={
            "limits.timeout_s": timeout,
            "inprocess.timeout_s": timeout,
            "workers": workers,
            "backend": backend,
        },
    )
