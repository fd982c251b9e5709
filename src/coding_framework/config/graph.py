"""Workflow configuration: routing and budgets of the generate -> execute -> review -> revise graph."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from coding_framework.config.agents import AgentsConfig
from coding_framework.config.loader import StrictModel, load_config
from coding_framework.config.repository import RepositoryConfig
from coding_framework.config.sandbox import SandboxConfig
from coding_framework.config.shipped import shipped_config

ReviewPolicy = Literal["on_failure", "always", "never"]


class GraphConfig(StrictModel):
    """Routing and stopping. YAML defaults: the shipped `graph` config.

    An episode stops after the first draft that passes every test, after `max_rounds` drafts, or once
    the LLM calls of the episode have used `max_tokens` tokens (prompt + completion, as the backend
    reports them), whichever comes first. A free-text problem has no tests, so it can never pass: it
    stops at its first draft that runs without error (stop reason `untested`).
    """

    max_rounds: int = Field(3, ge=1, le=50, description="Most drafts (Generator calls) per episode.")
    max_tokens: int | None = Field(
        16_384, ge=1, description="Token budget per episode over all LLM calls; null means no budget."
    )
    review: ReviewPolicy = Field(
        "on_failure",
        description="`on_failure`: review drafts that fail, before revising; `always`: also review the final "
        "passing (or untested) draft, recorded, then stop; `never`: revise from the Executor's feedback "
        "alone.",
    )
    checkpoint_db: Path | None = Field(
        None, description="SQLite file for LangGraph checkpoints (resume and inspect runs); null keeps none."
    )
    concurrency: int = Field(
        8, ge=1, le=1024, description="Episodes run at once by batch solving and evaluate."
    )


class WorkflowConfig(StrictModel):
    """Everything one workflow needs: the agents, the graph and the sandbox the Executor grades in."""

    agents: AgentsConfig = Field(default_factory=AgentsConfig)
    graph: GraphConfig = Field(default_factory=GraphConfig)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    repository: RepositoryConfig = Field(
        default_factory=RepositoryConfig, description="Repository tasks: the tool-calling agent's budget."
    )

    @classmethod
    def load(
        cls,
        agents: str | Path | None = None,
        graph: str | Path | None = None,
        sandbox: str | Path | None = None,
    ) -> WorkflowConfig:
        """Read each part from its YAML (a path or a shipped name); None reads the shipped `agents`, `graph`
        and `sandbox` configs themselves, never a file of that name in the working directory."""
        return cls(
            agents=load_config(AgentsConfig, agents if agents is not None else shipped_config("agents")),
            graph=load_config(GraphConfig, graph if graph is not None else shipped_config("graph")),
            sandbox=load_config(SandboxConfig, sandbox if sandbox is not None else shipped_config("sandbox")),
        )
