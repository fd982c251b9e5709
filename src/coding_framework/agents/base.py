"""The agent base class: an explicit mode, and state that round-trips through pydantic."""

from __future__ import annotations

from abc import ABC
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from coding_framework.config.agents import AgentMode

_MODES: tuple[AgentMode, ...] = ("training", "inference")


class AgentState(BaseModel):
    """Counters every agent keeps across episodes; subclasses add role-specific fields."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    calls: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


S = TypeVar("S", bound=AgentState)


class BaseAgent(ABC, Generic[S]):
    """One role of the workflow.

    ``mode`` is explicit: ``training`` agents route LLM calls through token sessions so every token id
    and logprob is kept; ``inference`` agents talk to a chat model. Per-episode data lives in the graph
    state, never on the agent, so one agent serves many concurrent episodes; ``state`` only holds
    counters, which ``dump_state`` / ``load_state`` round-trip as plain JSON.
    """

    role: ClassVar[str]
    state_type: ClassVar[type[AgentState]] = AgentState

    def __init__(self, mode: AgentMode = "inference") -> None:
        if mode not in _MODES:
            raise ValueError(f"agent mode must be one of {_MODES}, got {mode!r}")
        self.mode: AgentMode = mode
        self.state: S = self.state_type()  # type: ignore[assignment]

    def dump_state(self) -> dict[str, Any]:
        return {"role": self.role, "mode": self.mode, "state": self.state.model_dump(mode="json")}

    def load_state(self, data: dict[str, Any]) -> None:
        """Restore what ``dump_state`` wrote; a dump from another role or mode is refused."""
        if data.get("role") != self.role:
            raise ValueError(f"state belongs to role {data.get('role')!r}, not {self.role!r}")
        if data.get("mode") != self.mode:
            raise ValueError(
                f"state was saved in {data.get('mode')!r} mode; this agent runs in {self.mode!r}"
            )
        self.state = self.state_type.model_validate(data["state"])  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(mode={self.mode!r}, calls={self.state.calls})"
