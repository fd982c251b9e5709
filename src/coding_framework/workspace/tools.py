"""The agent's tools on a repository workspace, and the registry a user adds their own to.

A tool is an async function ``(ctx, **arguments) -> str`` registered with ``@tool(name, description)``; its
typed keyword parameters become the JSON schema the model is shown and the validation its calls get. A call
with unknown or missing arguments, or one the workspace refuses, becomes an error observation: it never ends
the episode. Observations are cut to the budget's size.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from coding_framework.grading import Grader
from coding_framework.registry import Registry
from coding_framework.workspace.files import Workspace, WorkspaceError

ToolFunction = Callable[..., Awaitable[str]]


@dataclass(frozen=True)
class ToolBudget:
    """Per-call limits: the observation's length and a test run's wall clock."""

    output_chars: int = 4000
    run_timeout_s: float = 20.0


@dataclass
class ToolContext:
    """What a tool acts on: the episode's workspace, the grader that runs code, and the budget."""

    workspace: Workspace
    grader: Grader | None = None
    budget: ToolBudget = field(default_factory=ToolBudget)
    finished: bool = False
    summary: str = ""


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    arguments: type[BaseModel]
    function: ToolFunction

    def schema(self) -> dict[str, Any]:
        """The OpenAI-style function schema the model is shown."""
        params = self.arguments.model_json_schema()
        params.pop("title", None)
        for prop in params.get("properties", {}).values():
            prop.pop("title", None)
        return {"name": self.name, "description": self.description, "parameters": params}


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Observation:
    """A tool's answer. ``ok`` is False for a refused or malformed call (counted, never fatal)."""

    tool: str
    text: str
    ok: bool = True


TOOLS: Registry[ToolSpec] = Registry("tool")


def tool(name: str, description: str) -> Callable[[ToolFunction], ToolFunction]:
    """Register an async ``(ctx, **arguments) -> str`` as the tool ``name``."""

    def decorator(function: ToolFunction) -> ToolFunction:
        fields: dict[str, Any] = {}
        for param in list(inspect.signature(function, eval_str=True).parameters.values())[1:]:
            default = ... if param.default is inspect.Parameter.empty else param.default
            fields[param.name] = (param.annotation, default)
        model = create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
        TOOLS.add(name, ToolSpec(name, description, model, function))
        return function

    return decorator


def tool_specs(names: list[str] | None = None) -> list[ToolSpec]:
    """The registered tools (``names``: these, in this order)."""
    return [TOOLS.resolve(n) for n in names] if names is not None else list(TOOLS.values())


async def call_tool(ctx: ToolContext, call: ToolCall, allowed: list[str] | None = None) -> Observation:
    """Run one call; every failure is an observation the model reads."""
    if call.name not in TOOLS or (allowed is not None and call.name not in allowed):
        names = ", ".join(allowed if allowed is not None else TOOLS)
        return Observation(call.name, f"error: no tool {call.name!r}; the tools are: {names}", ok=False)
    spec = TOOLS[call.name]
    try:
        args = spec.arguments.model_validate(call.arguments)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}"
                             for e in exc.errors())
        return Observation(call.name, f"error: bad arguments for {call.name}: {problems}", ok=False)
    try:
        text = await spec.function(ctx, **args.model_dump())
    except WorkspaceError as exc:
        return Observation(call.name, f"error: {exc}", ok=False)
    return Observation(call.name, _cut(text, ctx.budget.output_chars))


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n... [{len(text) - limit} more characters cut]"


__all__ = [
    "TOOLS", "Observation", "ToolBudget", "ToolCall", "ToolContext", "ToolFunction", "ToolSpec", "call_tool",
    "tool", "tool_specs",
]
