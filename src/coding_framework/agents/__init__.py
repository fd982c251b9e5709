"""The three roles: a Generator (LLM), an Executor (sandbox, rule-based) and a Reviewer (static or LLM)."""

from coding_framework.agents.executor import CodeExecutor
from coding_framework.agents.factory import Agents, EngineCache, build_agents
from coding_framework.agents.freeform import has_tests, problem_from_text
from coding_framework.agents.generator import Attempt, CodeGenerator
from coding_framework.agents.reviewer import CodeReviewer, LLMReviewer, StaticReviewer
from coding_framework.agents.types import Draft, Execution, Finding, Review

__all__ = [
    "Agents",
    "Attempt",
    "CodeExecutor",
    "CodeGenerator",
    "CodeReviewer",
    "Draft",
    "EngineCache",
    "Execution",
    "Finding",
    "LLMReviewer",
    "Review",
    "StaticReviewer",
    "build_agents",
    "has_tests",
    "problem_from_text",
]
