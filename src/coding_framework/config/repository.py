"""How a repository episode runs: the tool-calling agent's budget, its tools and their limits."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from coding_framework.config.llm import SamplingConfig
from coding_framework.config.loader import StrictModel


class RepositoryConfig(StrictModel):
    """The repository graph's settings (`graphs.repository`); the agents' models come from `agents`."""

    tools: list[str] = Field(
        default_factory=lambda: ["list_files", "read_file", "replace_in_file", "write_file", "run_tests",
                                 "finish"],
        description="The tools the agent is offered (names in the `workspace.TOOLS` registry).",
    )
    tool_format: Literal["auto", "json", "hermes"] = Field(
        "auto", description="auto: the chat template's own tool format (hermes) if it has one, else json."
    )
    max_turns: int = Field(12, ge=1, le=200, description="Model calls per episode (each is one tool call).")
    max_tokens: int = Field(
        6000, ge=256, description="The episode stops when its conversation would exceed this many tokens."
    )
    output_chars: int = Field(2000, ge=200, description="Longest tool observation; the rest is cut.")
    run_timeout_s: float = Field(20.0, gt=0, le=600, description="Wall-clock budget of one test run.")
    grade_timeout_s: float = Field(30.0, gt=0, le=600, description="Wall-clock budget of the hidden tests.")
    review: bool = Field(
        False, description="Have the Reviewer critique the changed files (recorded, not fed back)."
    )
    sampling: SamplingConfig = Field(
        default_factory=lambda: SamplingConfig(max_new_tokens=256, temperature=0.2, top_p=0.95),
        description="The agent's sampling for each call.",
    )


__all__ = ["RepositoryConfig"]
