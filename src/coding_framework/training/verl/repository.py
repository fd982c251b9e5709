"""Repository tasks in verl's agent loop: one episode of the repository graph per sample.

``RepositoryAgentLoop`` (registered as ``REPOSITORY_AGENT_NAME``) runs the tool-calling agent on the
sample's task (``graphs.repository``: act -> act -> ... -> execute) with ``ServerManagerEngine`` as its
engine, so every turn goes token-in/token-out to verl's rollout replicas through one ``TokenSession``: the
model's own tokens carry the loss and the tool observations between them are mask-0 tokens of the
response. The result is ``interop.to_agent_loop_output`` of that trajectory, as ``CodingAgentLoop``
returns it, with ``reward_score`` the hidden tests' verdict reward (the share of FAIL_TO_PASS tests passed
times the share of PASS_TO_PASS tests kept). ``extra_fields`` add the episode's figures:

* ``tool_call_counts`` (verl logs its min/mean/max per step), ``tool_calls`` (by kind, answers without a
  usable call under ``parse_error``), ``stop_reason``;
* ``reward_extra_info``: ``resolved``, ``infrastructure_error``, ``turns``, ``parse_failures`` and
  ``tool_errors`` (numbers; verl puts them in the batch, its rollout dumps and its validation metrics).

An infrastructure failure (a sandbox run of the episode's tools or hidden tests that raised, or that the
sandbox marked as its own failure) is not the policy's doing: the episode keeps reward 0, its row is left
out of the loss (``interop.mask_out``: ``response_mask`` all 0, which verl's loss aggregations skip) and it is
counted (``infrastructure_error``; per step ``rollout/infra_masked``). verl's batch has a fixed size (the
rollouts are joined row by row with the prompts they came from), so the row cannot be dropped, and GRPO
still counts its 0 in its group's mean and standard deviation.

When the whole conversation would exceed ``rollout.response_length`` the episode stops there and its
repository is graded as it is (``response_budget_exhausted`` in the row's metadata).

Rows (``verl_repository_rows`` / ``write_verl_repository_dataset``) carry the task's JSON in
``extra_info.task`` and its opening messages as ``prompt`` (what verl measures against
``data.max_prompt_length``). ``repository_step_metrics`` sums a generated batch up as the local trainer's
``rollouts.repository.repository_metrics`` does.
"""

from __future__ import annotations

import functools
import json
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopMetrics, AgentLoopOutput, register

from coding_framework.agents.repository import RepositoryAgent, opening_messages
from coding_framework.agents.tool_calls import ToolFormat
from coding_framework.config import load_config
from coding_framework.config.graph import WorkflowConfig
from coding_framework.config.repository import RepositoryConfig
from coding_framework.grading import Grader
from coding_framework.grading.repository import agrade_repository, hidden_suite
from coding_framework.graphs.repository import repository_graph_for, tool_counts, workspace_of
from coding_framework.problems import Problem
from coding_framework.repotasks import RepoTask
from coding_framework.sandbox import ExecutionResult
from coding_framework.sandbox.pool import INFRASTRUCTURE_ERROR
from coding_framework.training.rollouts.repository import PARSE_ERROR, InfraGuard, repository_episode
from coding_framework.training.trajectory import trajectories_from_episode
from coding_framework.training.verl.agent_loop import (
    AGENT_NAME,
    ResponseBudgetExhausted,
    ServerManagerEngine,
    write_rows,
)
from coding_framework.training.verl.interop import loss_masked, mask_out, to_agent_loop_output

__all__ = [
    "REPOSITORY_AGENT_NAME", "RepositoryAgentLoop", "repo_task_from_row", "repository_step_metrics",
    "verl_repository_rows", "write_verl_repository_dataset",
]

REPOSITORY_AGENT_NAME = "coding_framework_repository"


class _EpisodeGuard(InfraGuard):
    """``InfraGuard`` for the one episode an agent loop runs: every infrastructure failure is its own."""

    async def agrade(self, problem: Problem, program: str) -> ExecutionResult:
        result = await super().agrade(problem, program)
        if result.error_type == INFRASTRUCTURE_ERROR:
            self.failures.setdefault(0, f"{problem.task_id}: {result.error_message}")
        return result


class _Resources:
    """What a worker's episodes share: the workflow (its ``repository`` section from the ``repository``
    YAML) and the sandboxed grader."""

    def __init__(self, settings: Mapping[str, str | None]) -> None:
        workflow = WorkflowConfig.load(settings.get("agents"), settings.get("graph"), settings.get("sandbox"))
        path = settings.get("repository")
        repository = load_config(RepositoryConfig, path) if path is not None else workflow.repository
        self.workflow = workflow.model_copy(update={"repository": repository})
        self.grader = Grader(self.workflow.sandbox)


@functools.cache
def _resources(settings_json: str) -> _Resources:
    return _Resources(json.loads(settings_json))


def repo_task_from_row(row: Mapping[str, Any]) -> RepoTask:
    """The ``RepoTask`` a dataset row written by ``verl_repository_rows`` carries in ``extra_info.task``."""
    info = row.get("extra_info") or {}
    if "task" not in info:
        raise ValueError("the dataset row has no extra_info.task: write the dataset with "
                         "coding_framework.training.verl.repository.write_verl_repository_dataset")
    raw = info["task"]
    return RepoTask.model_validate_json(raw) if isinstance(raw, str) else RepoTask.model_validate(raw)


@register(REPOSITORY_AGENT_NAME)
class RepositoryAgentLoop(AgentLoopBase):
    """One repository-graph episode per sample. Settings come from the trainer config's ``coding_framework``
    section, as ``CodingAgentLoop``'s: YAML paths ``agents``, ``graph``, ``sandbox`` and ``repository`` (the
    agent's tools and budgets, ``RepositoryConfig``), each optional; ``send_role`` as there."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.began = time.time()  # as CodingAgentLoop: the episode starts when verl builds its loop
        super().__init__(*args, **kwargs)
        section = self.config.get(AGENT_NAME) or {}
        keys = ("agents", "graph", "sandbox", "repository")
        settings = {k: (str(section[k]) if section.get(k) is not None else None) for k in keys}
        self.resources = _resources(json.dumps(settings, sort_keys=True))
        self.send_role = bool(section.get("send_role", False))

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        task = repo_task_from_row(kwargs)
        res = self.resources
        engine = ServerManagerEngine(self.server_manager, self.tokenizer, sampling_params,
                                     prompt_length=self.rollout_config.prompt_length,
                                     response_length=self.rollout_config.response_length,
                                     send_role=self.send_role)
        guard = _EpisodeGuard(res.grader)
        graph = repository_graph_for(res.workflow, guard, engine=engine,  # type: ignore[arg-type]  # agrade only
                                     checkpointer=InMemorySaver())
        thread: RunnableConfig = {"configurable": {"thread_id": engine.request_id}}
        exhausted = False
        try:
            state = await graph.ainvoke({"task": task.model_dump(mode="json")}, thread)
        except ResponseBudgetExhausted:
            state, exhausted = dict((await graph.aget_state(thread)).values), True
            suite = hidden_suite(task, timeout_s=res.workflow.repository.grade_timeout_s)
            verdict = await agrade_repository(guard, task, workspace_of(state).files, suite)  # type: ignore[arg-type]
            state.update(verdict=verdict.as_dict(), passed=verdict.resolved, stop_reason="token_budget")
        episode = repository_episode(0, 0, task, state, guard.failures.get(0))
        masked = episode.masked is not None
        reward = 0.0 if masked else episode.reward.value
        group = kwargs.get("uid")
        verdict = state["verdict"]
        (traj,) = trajectories_from_episode(
            state, (RepositoryAgent.role,), reward=reward, group_id=str(group) if group is not None else None,
            metadata={"resolved": bool(verdict["resolved"]), "fail_to_pass": list(verdict["fail_to_pass"]),
                      "pass_to_pass": list(verdict["pass_to_pass"]), "refused": list(verdict["refused"]),
                      "infrastructure_error": masked, "infrastructure_failure": episode.masked,
                      "response_budget_exhausted": exhausted,
                      "episode_began": self.began, "episode_ended": time.time()},
        )
        output = to_agent_loop_output(traj, AgentLoopMetrics(generate_sequences=engine.generate_s,
                                                             compute_score=guard.seconds))
        if masked:
            mask_out(output)
        exchanges = state.get("exchanges", [])
        counts = tool_counts(exchanges)
        parse_failures = counts.get(PARSE_ERROR, 0)
        output.extra_fields.update(
            min_global_steps=engine.min_global_steps, max_global_steps=engine.max_global_steps,
            tool_calls=counts, tool_call_counts=len(exchanges) - parse_failures,
            stop_reason=state.get("stop_reason"),
            reward_extra_info={
                "resolved": float(verdict["resolved"]), "infrastructure_error": float(masked),
                "turns": len(exchanges), "parse_failures": parse_failures,
                "tool_errors": sum(1 for x in exchanges if x["tool"] is not None and not x["ok"]),
            },
        )
        return output


def verl_repository_rows(tasks: Sequence[RepoTask], config: RepositoryConfig, tool_format: ToolFormat,
                         split: str = "train") -> list[dict[str, Any]]:
    """Rows for verl's ``RLHFDataset``: the agent's opening messages (``config``'s tools in
    ``tool_format``) as ``prompt``, the task in ``extra_info.task`` (JSON), ``agent_name`` this loop."""
    return [
        {
            "data_source": f"coding_framework/repository/{t.source}",
            "prompt": opening_messages(t, config, tool_format),
            "agent_name": REPOSITORY_AGENT_NAME,
            "ability": "coding",
            "reward_model": {"style": "rule", "ground_truth": t.instance_id},
            "extra_info": {"index": i, "split": split, "task_id": t.instance_id,
                           "task": t.model_dump_json()},
        }
        for i, t in enumerate(tasks)
    ]


def write_verl_repository_dataset(tasks: Sequence[RepoTask], path: str | Path, config: RepositoryConfig,
                                  tool_format: ToolFormat, split: str = "train",
                                  data_sha256: str | None = None) -> Path:
    """``verl_repository_rows`` as a parquet file, as ``agent_loop.write_verl_dataset`` writes problems."""
    return write_rows(verl_repository_rows(tasks, config, tool_format, split), path, data_sha256)


def repository_step_metrics(non_tensor_batch: Mapping[str, np.ndarray]) -> dict[str, float]:
    """A generated batch of repository rows (its non-tensor columns) summed up under the local trainer's
    names: ``rollout/infra_masked`` (rows left out), and over the rows that train ``rollout/resolved_rate``,
    ``rollout/turns_mean``, ``rollout/parse_failures``, ``rollout/tool_errors``, ``rollout/finished_rate``
    and ``tools/<name>``."""
    metadata, calls = non_tensor_batch["metadata"], non_tensor_batch["tool_calls"]
    trained = [i for i in range(len(metadata)) if not loss_masked(metadata[i])]
    out = {"rollout/infra_masked": float(len(metadata) - len(trained))}
    if not trained:
        return out
    by_kind: Counter[str] = Counter()
    for i in trained:
        by_kind.update(calls[i])
    n = len(trained)

    def total(key: str) -> float:
        return float(sum(float(non_tensor_batch[key][i]) for i in trained))

    out.update({
        "rollout/resolved_rate": total("resolved") / n,
        "rollout/turns_mean": total("turns") / n,
        "rollout/parse_failures": float(by_kind.pop(PARSE_ERROR, 0)),
        "rollout/tool_errors": total("tool_errors"),
        "rollout/finished_rate": sum(non_tensor_batch["stop_reason"][i] == "finished" for i in trained) / n,
    })
    out.update({f"tools/{name}": float(count) for name, count in sorted(by_kind.items())})
    return out
