"""Rollouts of repository tasks: episodes of the repository graph, rewarded by their hidden tests' verdict.

Each episode is the tool-calling agent's turns on a task's repository (``graphs.repository``), sampled in
lockstep waves like the problem rollouts (``episodes.LockstepEngine``), then graded by the task's hidden
tests. Its reward is the verdict's: the share of FAIL_TO_PASS tests passed times the share of PASS_TO_PASS
tests kept; it passed when the task is resolved.

An infrastructure failure is the sandbox's fault, not the policy's: an episode whose hidden tests or tool
runs hit one (a grader call that raised, or a result the sandbox marked as an infrastructure error) is
``masked``. It yields no training row, its group's advantages are computed without it, and each step counts
such episodes (``rollout/infra_masked``). A backend that cannot run at all (``BackendUnavailable``) still
stops the run: masking every episode would hide it.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from typing import Any, cast

from coding_framework.config.graph import WorkflowConfig
from coding_framework.grading import Grader
from coding_framework.graphs.repository import repository_graph_for, tool_counts
from coding_framework.llm.base import TokenEngine
from coding_framework.logs import get_logger
from coding_framework.problems import Problem
from coding_framework.repotasks import RepoTask
from coding_framework.rewards import RewardOutput
from coding_framework.sandbox import BackendUnavailable, ExecutionResult
from coding_framework.sandbox.pool import INFRASTRUCTURE_ERROR
from coding_framework.training.rollouts.episodes import (
    Episode,
    LockstepEngine,
    RolloutBatch,
    current_episode,
    request_failure,
    run_lockstep,
)

__all__ = ["PARSE_ERROR", "InfraGuard", "collect_repository", "repository_episode", "repository_metrics"]

log = get_logger(__name__)

PARSE_ERROR = "parse_error"  # `graphs.repository.tool_counts`' kind for an answer without a usable tool call


class InfraGuard:
    """The grader of one rollout's repository episodes: it notes every infrastructure failure against the
    episode it happened in (``failures``: episode index -> reason) and sums the seconds spent grading.

    A call that raises (other than ``BackendUnavailable``) returns an infrastructure-error result, so its
    episode finishes and is masked instead of failing the whole batch. The repository graph and its tools
    need only ``agrade`` of a ``Grader``."""

    def __init__(self, grader: Grader) -> None:
        self.grader = grader
        self.failures: dict[int, str] = {}
        self.seconds = 0.0

    async def agrade(self, problem: Problem, program: str) -> ExecutionResult:
        start = time.perf_counter()
        try:
            result = await self.grader.agrade(problem, program)
        except BackendUnavailable:
            raise
        except Exception as exc:  # the sandbox's own failure, whatever it raised: the episode is masked
            log.warning("repository_grading_failed", task_id=problem.task_id, error=repr(exc))
            result = ExecutionResult(passed=False, status="error", error_type=INFRASTRUCTURE_ERROR,
                                     error_message=f"{type(exc).__name__}: {exc}")
        self.seconds += time.perf_counter() - start
        episode = current_episode()
        if result.error_type == INFRASTRUCTURE_ERROR and episode is not None:
            self.failures.setdefault(episode, f"{problem.task_id}: {result.error_message}")
        return result


def repository_episode(index: int, group: int, task: RepoTask, state: dict[str, Any],
                       failure: str | None = None) -> Episode:
    """The episode of a finished repository graph run: the verdict's reward, passed when resolved, masked
    on an infrastructure failure (``failure``, one its grader noted, or the verdict's own) or when a model
    request ended it (``episodes.run_lockstep``)."""
    if (request := request_failure(task.instance_id, state)) is not None:
        return Episode(index=index, group=group, problem=task, state=state,
                       reward=RewardOutput(value=0.0, raw=0.0, details={"passed": False}),
                       passed=False, masked=request)
    verdict = state["verdict"]
    if failure is None and verdict["infrastructure_error"]:
        failure = f"{task.instance_id}: hidden tests: {verdict['status']}"
    reward = float(verdict["reward"])
    details = {"passed": bool(verdict["resolved"]), "fail_to_pass": verdict["fail_to_pass"],
               "pass_to_pass": verdict["pass_to_pass"]}
    return Episode(index=index, group=group, problem=task, state=state,
                   reward=RewardOutput(value=reward, raw=reward, details=details),
                   passed=bool(verdict["resolved"]), masked=failure)


async def collect_repository(
    engine: TokenEngine,
    workflow: WorkflowConfig,
    grader: Grader,
    tasks: Sequence[RepoTask],
    group_size: int,
    seed: int,
) -> RolloutBatch:
    """``group_size`` episodes of each task through the repository graph's training variant (episode ``i``
    belongs to group ``i // group_size``), each rewarded by its verdict. ``seconds["reward"]`` sums the
    seconds of every sandbox run (tool test runs and hidden tests; concurrent runs add up)."""
    jobs = [(g, t) for g, t in enumerate(tasks) for _ in range(group_size)]
    lockstep = LockstepEngine(engine, seed, len(jobs))
    guard = InfraGuard(grader)
    graph = repository_graph_for(workflow, cast(Grader, guard), engine=lockstep)
    start = time.perf_counter()
    states = await run_lockstep(graph, [{"task": t.model_dump(mode="json")} for _, t in jobs], lockstep)
    episodes_s = time.perf_counter() - start
    episodes = [repository_episode(i, g, t, s, guard.failures.get(i))
                for i, ((g, t), s) in enumerate(zip(jobs, states, strict=True))]
    for episode in episodes:
        if episode.masked is not None:
            log.warning("episode_masked", episode=episode.index, reason=episode.masked)
    seconds = {"generate": lockstep.generate_s, "episodes": episodes_s, "reward": guard.seconds}
    return RolloutBatch(episodes, lockstep.generated_tokens, lockstep.waves, seconds)


def repository_metrics(episodes: Sequence[Episode], tools: Sequence[str] = ()) -> dict[str, float]:
    """A repository batch's figures: ``rollout/infra_masked`` (episodes left out), and over the episodes
    that train: ``rollout/resolved_rate``, ``rollout/turns_mean``, ``rollout/parse_failures`` (answers
    without a usable tool call), ``rollout/tool_errors`` (tool calls that failed), ``rollout/finished_rate``
    (episodes that called ``finish``) and ``tools/<name>`` (calls of each tool, summed; 0 for each of
    ``tools`` not called)."""
    trained = [e for e in episodes if e.masked is None]
    out = {"rollout/infra_masked": float(len(episodes) - len(trained))}
    if not trained:
        return out
    calls: Counter[str] = Counter({name: 0 for name in tools})
    tool_errors = 0
    for episode in trained:
        exchanges = episode.state.get("exchanges", [])
        calls.update(tool_counts(exchanges))
        tool_errors += sum(1 for x in exchanges if x["tool"] is not None and not x["ok"])
    n = len(trained)
    out.update({
        "rollout/resolved_rate": sum(e.passed for e in trained) / n,
        "rollout/turns_mean": sum(len(e.state.get("exchanges", [])) for e in trained) / n,
        "rollout/parse_failures": float(calls.pop(PARSE_ERROR, 0)),
        "rollout/tool_errors": float(tool_errors),
        "rollout/finished_rate": sum(e.state.get("stop_reason") == "finished" for e in trained) / n,
    })
    out.update({f"tools/{name}": float(count) for name, count in sorted(calls.items())})
    return out
