"""The repository workflow: the tool-calling agent acts until it finishes, then the hidden tests grade it.

    act -> act -> ... -> execute -> (review) -> END

``act`` is one model turn and the tool call in it, run on the episode's workspace (the task's snapshot
plus the ``changed`` files so far, all plain JSON in the state, so an episode can be checkpointed and
resumed). ``execute`` grades the final repository with the task's hidden tests in the hardened tier.
``review`` (``repository.review``) has the Reviewer critique the changed files; its text is recorded.
"""

from __future__ import annotations

import operator
from collections import Counter
from typing import Annotated, Any, Literal, TypedDict

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from coding_framework.agents.factory import EngineCache
from coding_framework.agents.repository import RepositoryAgent, opening_messages
from coding_framework.agents.reviewer import CodeReviewer, LLMReviewer, StaticReviewer
from coding_framework.agents.tool_calls import read_turn, render_observation
from coding_framework.agents.types import Execution
from coding_framework.config.graph import WorkflowConfig
from coding_framework.config.repository import RepositoryConfig
from coding_framework.grading import Grader
from coding_framework.grading.repository import agrade_repository, hidden_suite
from coding_framework.llm.base import TokenEngine
from coding_framework.repotasks.task import RepoTask
from coding_framework.workspace import ToolBudget, ToolContext, Workspace, call_tool

RepoStopReason = Literal["finished", "max_turns", "token_budget"]
ACT, EXECUTE, REVIEW = "act", "execute", "review"


class RepoEpisodeState(TypedDict, total=False):
    """One repository episode. Input: ``task`` (a RepoTask as a dict) and optionally ``seed``. Output: the
    ``verdict`` (``grading.repository.RepoVerdict.as_dict``), ``passed`` (resolved), ``stop_reason``,
    every turn in ``exchanges`` and, in training, the token-exact ``calls`` and ``trajectory``."""

    task: dict[str, Any]
    seed: int
    opening: list[dict[str, str]]
    exchanges: Annotated[list[dict[str, Any]], operator.add]
    """Per turn: ``text`` (the answer), ``tool`` (None: unparseable), ``arguments``, ``ok``, ``parse_error``,
    and ``observation`` (the messages the model read next)."""
    changed: dict[str, str | None]
    calls: Annotated[list[dict[str, Any]], operator.add]
    trajectory: dict[str, list[Any]]
    tokens_used: Annotated[int, operator.add]
    context_tokens: int
    finished: bool
    stop_reason: RepoStopReason | None
    verdict: dict[str, Any]
    passed: bool
    review: str


def workspace_of(state: RepoEpisodeState) -> Workspace:
    task_files = state["task"]["files"]
    workspace = Workspace(task_files)
    for path, text in (state.get("changed") or {}).items():
        if text is None:
            workspace.files.pop(path, None)
        else:
            workspace.files[path] = text
    return workspace


def tool_counts(exchanges: list[dict[str, Any]]) -> dict[str, int]:
    """Tool calls by kind; unparseable answers count under ``parse_error``."""
    return dict(Counter(e["tool"] if e["tool"] is not None else "parse_error" for e in exchanges))


def make_nodes(agent: RepositoryAgent, grader: Grader, config: RepositoryConfig,
               reviewer: CodeReviewer | None) -> dict[str, Any]:
    budget = ToolBudget(output_chars=config.output_chars, run_timeout_s=config.run_timeout_s)

    async def act(state: RepoEpisodeState) -> dict[str, Any]:
        task = RepoTask.model_validate(state["task"])
        opening = state.get("opening") or opening_messages(task, config, agent.format)
        exchanges = state.get("exchanges", [])
        turn = await agent.aturn(opening, exchanges, state.get("calls", []), state.get("seed"))
        ctx = ToolContext(workspace_of(state), grader, budget)
        parsed = read_turn(turn.text, agent.format)
        if parsed.call is None:
            name, arguments, ok, text = None, {}, False, f"error: {parsed.error}"
        else:
            obs = await call_tool(ctx, parsed.call, config.tools)
            name, arguments, ok, text = parsed.call.name, parsed.call.arguments, obs.ok, obs.text
        exchange: dict[str, Any] = {
            "text": turn.text, "tool": name, "arguments": arguments, "ok": ok, "parse_error": parsed.error,
            "observation": [
                {"role": "user", "content": render_observation(name or "error", text, agent.format)}
            ],
        }
        update: dict[str, Any] = {
            "opening": opening, "exchanges": [exchange], "changed": ctx.workspace.changed(),
            "tokens_used": turn.prompt_tokens + turn.completion_tokens,
            "context_tokens": turn.prompt_tokens + turn.completion_tokens,
            "finished": ctx.finished,
        }
        if turn.record is not None:
            update["calls"] = [turn.record]
            update["trajectory"] = turn.trajectory
        return update

    def after_act(state: RepoEpisodeState) -> str:
        return EXECUTE if stop_reason(state) is not None else ACT

    def stop_reason(state: RepoEpisodeState) -> RepoStopReason | None:
        if state.get("finished"):
            return "finished"
        if len(state.get("exchanges", [])) >= config.max_turns:
            return "max_turns"
        # The next turn adds an observation and an answer of up to max_new_tokens.
        if state.get("context_tokens", 0) + config.output_chars // 3 + config.sampling.max_new_tokens \
                > config.max_tokens:
            return "token_budget"
        return None

    async def execute(state: RepoEpisodeState) -> dict[str, Any]:
        task = RepoTask.model_validate(state["task"])
        suite = hidden_suite(task, timeout_s=config.grade_timeout_s)
        verdict = await agrade_repository(grader, task, workspace_of(state).files, suite)
        return {"verdict": verdict.as_dict(), "passed": verdict.resolved, "stop_reason": stop_reason(state)}

    async def review(state: RepoEpisodeState) -> dict[str, Any]:
        assert reviewer is not None
        task = RepoTask.model_validate(state["task"])
        workspace = workspace_of(state)
        code = "\n\n".join(f"# file: {path}\n{text}" for path, text in workspace.changed().items()
                           if text is not None and path.endswith(".py"))
        verdict = state["verdict"]
        f_pass, f_total = verdict["fail_to_pass"]
        execution = Execution(passed=verdict["resolved"], status=verdict["status"], has_tests=True,
                              tests_passed=f_pass, tests_total=f_total,
                              feedback=f"{f_pass} of {f_total} tests of the issue pass")
        problem = hidden_suite(task).problem
        critique = await reviewer.areview(problem, code or "# no code changed", execution)
        return {"review": critique.text}

    return {ACT: act, EXECUTE: execute, REVIEW: review, "after_act": after_act}


def build_repository_graph(agent: RepositoryAgent, grader: Grader, config: RepositoryConfig | None = None,
                           reviewer: CodeReviewer | None = None, *,
                           checkpointer: BaseCheckpointSaver | None = None,
                           name: str = "repository") -> CompiledStateGraph:
    """Compile the repository workflow for one episode per invocation."""
    config = config or agent.config
    nodes = make_nodes(agent, grader, config, reviewer if config.review else None)
    graph = StateGraph(RepoEpisodeState)
    graph.add_node(ACT, nodes[ACT])
    graph.add_node(EXECUTE, nodes[EXECUTE])
    graph.add_edge(START, ACT)
    graph.add_conditional_edges(ACT, nodes["after_act"], [ACT, EXECUTE])
    if config.review and reviewer is not None:
        graph.add_node(REVIEW, nodes[REVIEW])
        graph.add_edge(EXECUTE, REVIEW)
        graph.add_edge(REVIEW, END)
    else:
        graph.add_edge(EXECUTE, END)
    compiled = graph.compile(checkpointer=checkpointer, name=name)
    return compiled.with_config(recursion_limit=config.max_turns + 8)


def repository_graph_for(config: WorkflowConfig, grader: Grader, *, chat_model: BaseChatModel | None = None,
                         engine: TokenEngine | None = None, engines: EngineCache | None = None,
                         checkpointer: BaseCheckpointSaver | None = None) -> CompiledStateGraph:
    """The repository workflow from a workflow config: ``engine`` for training (token-exact), else a chat
    model (``chat_model``, or the config's Generator model)."""
    engines = engines if engines is not None else EngineCache(config.agents.vllm,
                                                               timeout_s=config.agents.timeout_s)
    repo = config.repository
    if engine is not None:
        agent = RepositoryAgent(repo, engine=engine)
    else:
        chat = chat_model or engines.chat_model(config.agents.generator_model(), repo.sampling,
                                                role=RepositoryAgent.role)
        agent = RepositoryAgent(repo, chat_model=chat)
    reviewer: CodeReviewer | None = None
    if repo.review and config.agents.reviewer.backend == "static":
        reviewer = StaticReviewer(config.agents.reviewer)
    elif repo.review and config.agents.reviewer.backend == "llm":
        reviewer = LLMReviewer(engines.chat_model(config.agents.reviewer_model(),
                                                  config.agents.reviewer.sampling), config.agents.reviewer)
    return build_repository_graph(agent, grader, repo, reviewer, checkpointer=checkpointer,
                                  name="repository_training" if engine is not None else "repository")


__all__ = [
    "RepoEpisodeState", "RepoStopReason", "build_repository_graph", "repository_graph_for", "tool_counts",
    "workspace_of",
]
