"""The repository workspace: an episode's private copy of a task's repository and the tools that act on it."""

from coding_framework.workspace.builtin import DEFAULT_TOOLS
from coding_framework.workspace.files import Workspace, WorkspaceError
from coding_framework.workspace.tools import (
    TOOLS,
    Observation,
    ToolBudget,
    ToolCall,
    ToolContext,
    ToolSpec,
    call_tool,
    tool,
    tool_specs,
)

__all__ = [
    "DEFAULT_TOOLS", "TOOLS", "Observation", "ToolBudget", "ToolCall", "ToolContext", "ToolSpec", "Workspace",
    "WorkspaceError", "call_tool", "tool", "tool_specs",
]
