"""Rollouts: many concurrent episodes of the training graph, sampled reproducibly, then rewarded.

Determinism. An async micro-batcher groups requests by arrival time, so the rows decoded together (and
with them the padding, the fp32 rounding and, rarely, a sampled token) would depend on timing. Here a
``LockstepEngine`` holds every Generator call until each live episode is either waiting on the engine
or finished, then decodes that *wave* as one batch, rows ordered by episode index and seeded from the
rollout seed and the wave number. Episodes stay concurrent (sandbox runs overlap) while the sampled
tokens depend only on the seed, the weights and the thread count, which is what makes ``--resume`` exact.

``collect`` runs problems through the training graph; ``rollouts.repository`` runs repository tasks
through the repository graph into the same ``Episode`` s.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from coding_framework.agents.executor import AsyncGrader, assemble_program
from coding_framework.config.graph import WorkflowConfig
from coding_framework.config.llm import SamplingConfig
from coding_framework.graphs import build_training_graph
from coding_framework.llm.base import (
    REQUEST_FAILED,
    BatchRequestsFailed,
    Generation,
    RequestFailed,
    SamplingParams,
    TokenEngine,
)
from coding_framework.logs import get_logger
from coding_framework.problems import Problem
from coding_framework.rewards import BaseRewardFunction, RewardOutput
from coding_framework.training.algos.schedule import Task
from coding_framework.training.algos.seeds import derive_seed

__all__ = [
    "REQUEST_FAILED", "Episode", "LockstepEngine", "RolloutBatch", "collect", "current_episode",
    "final_program", "request_failure", "run_lockstep", "step_workflow",
]

log = get_logger(__name__)

_EPISODE: contextvars.ContextVar[int] = contextvars.ContextVar("rollout_episode")



@dataclass
class _Request:
    episode: int
    prompt: list[int]
    params: SamplingParams
    future: asyncio.Future[Generation]


def current_episode() -> int | None:
    """The index of the episode whose task runs this code (inside ``run_lockstep``), else None."""
    return _EPISODE.get(None)


class LockstepEngine:
    """A TokenEngine over ``engine`` that decodes the calls of ``episodes`` concurrent episodes in waves.

    Episodes must run as tasks started by ``run_lockstep`` (which tells the engine which episode a call
    belongs to and when an episode ends). ``generate``/``generate_batch`` pass straight through.
    """

    def __init__(self, engine: TokenEngine, seed: int, episodes: int) -> None:
        self.engine = engine
        self.tokenizer = engine.tokenizer
        self.seed = seed
        self.waves = 0
        self.generated_tokens = 0
        self.generate_s = 0.0
        self._live = episodes
        self._pending: list[_Request] = []

    @property
    def policy_version(self) -> str:
        return self.engine.policy_version

    def generate(self, prompt_ids: Sequence[int], params: SamplingParams) -> Generation:
        return self.engine.generate(prompt_ids, params)

    def generate_batch(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[Generation]:
        return self.engine.generate_batch(prompts, params)

    async def agenerate(self, prompt_ids: Sequence[int], params: SamplingParams) -> Generation:
        episode = _EPISODE.get(None)
        if episode is None:
            raise RuntimeError("LockstepEngine.agenerate called outside an episode started by run_lockstep")
        future: asyncio.Future[Generation] = asyncio.get_running_loop().create_future()
        self._pending.append(_Request(episode, list(prompt_ids), params, future))
        self._maybe_flush()
        return await future

    def episode_done(self) -> None:
        self._live -= 1
        self._maybe_flush()

    def _maybe_flush(self) -> None:
        if self._pending and len(self._pending) >= self._live:
            batch, self._pending = sorted(self._pending, key=lambda r: r.episode), []
            asyncio.get_running_loop().create_task(self._decode(batch, self.waves))
            self.waves += 1

    async def _decode(self, batch: list[_Request], wave: int) -> None:
        groups: dict[SamplingParams, list[_Request]] = {}
        # Local per-role adapters, or a server's per-role models (a vLLM rollout engine's LoRA names)
        routes = (getattr(self.engine, "adapters", None) is not None
                  or bool(getattr(self.engine, "role_models", None)))
        for request in batch:  # calls with different settings (e.g. an LLM reviewer) decode separately
            # The role only matters to an engine that routes by role; elsewhere it must not split a wave.
            key = request.params if routes else dataclasses.replace(request.params, role=None)
            groups.setdefault(key, []).append(request)
        for n, (params, requests) in enumerate(groups.items()):
            seeded = dataclasses.replace(params, seed=derive_seed(self.seed, wave, n))
            start = time.perf_counter()
            try:
                outcomes: list[Generation | RequestFailed] = list(await asyncio.to_thread(
                    self.engine.generate_batch, [r.prompt for r in requests], seeded
                ))
            except BatchRequestsFailed as exc:
                outcomes = exc.outcomes
            except Exception as exc:
                for r in requests:
                    r.future.set_exception(exc)
                continue
            self.generate_s += time.perf_counter() - start
            for r, outcome in zip(requests, outcomes, strict=True):
                if isinstance(outcome, RequestFailed):
                    r.future.set_exception(outcome)
                else:
                    self.generated_tokens += len(outcome.token_ids)
                    r.future.set_result(outcome)


async def run_lockstep(
    graph: Any, inputs: Sequence[dict[str, Any]], engine: LockstepEngine
) -> list[dict[str, Any]]:
    """Run one graph invocation per input concurrently; the final states, in input order. An episode one
    of whose model requests failed alone (``RequestFailed``: it timed out, or the server refused that
    prompt) ends there: its state is ``{REQUEST_FAILED: message}`` and the others go on."""

    async def one(index: int, episode_input: dict[str, Any]) -> dict[str, Any]:
        _EPISODE.set(index)
        try:
            return await graph.ainvoke(episode_input)
        except RequestFailed as exc:
            log.warning("episode_request_failed", episode=index, error=str(exc))
            return {REQUEST_FAILED: str(exc)}
        finally:
            engine.episode_done()

    return list(await asyncio.gather(*(one(i, x) for i, x in enumerate(inputs))))


@dataclass
class Episode:
    """One finished episode: its task (a problem or a repository task), group (task slot in the batch),
    final graph state and reward. ``masked``: why it is left out of training (an infrastructure failure,
    not the policy's doing; it is counted, never scored); None: it trains."""

    index: int
    group: int
    problem: Task
    state: dict[str, Any]
    reward: RewardOutput
    passed: bool
    masked: str | None = None

    @property
    def rounds(self) -> int:
        return int(self.state.get("round", 0))


@dataclass
class RolloutBatch:
    episodes: list[Episode]
    generated_tokens: int
    waves: int
    seconds: dict[str, float] = field(default_factory=dict)
    stats: dict[str, float] = field(default_factory=dict)  # batch hygiene's counts (refills)


def step_workflow(
    base: WorkflowConfig, max_new_tokens: int, temperature: float, top_p: float, max_rounds: int | None = None
) -> WorkflowConfig:
    """``base`` with the Generator's sampling (and optionally the round budget) set for one rollout; the
    repository agent, the Generator of repository episodes, samples alike."""
    sampling = SamplingConfig(
        max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p, seed=None
    )
    generator = base.agents.generator.model_copy(update={"sampling": sampling})
    agents = base.agents.model_copy(update={"generator": generator})
    graph = base.graph if max_rounds is None else base.graph.model_copy(update={"max_rounds": max_rounds})
    repository = base.repository.model_copy(update={"sampling": sampling})
    return base.model_copy(update={"agents": agents, "graph": graph, "repository": repository})


def final_program(problem: Problem, state: dict[str, Any]) -> str:
    return assemble_program(problem, state.get("code", ""))


def request_failure(task_id: str, state: dict[str, Any]) -> str | None:
    """Why an episode is masked when a model request ended it (``run_lockstep``), else None."""
    return f"{task_id}: request failed: {state[REQUEST_FAILED]}" if REQUEST_FAILED in state else None


async def collect(
    engine: TokenEngine,
    workflow: WorkflowConfig,
    grader: AsyncGrader,
    problems: Sequence[Problem],
    group_size: int,
    seed: int,
    reward_fn: BaseRewardFunction,
) -> RolloutBatch:
    """``group_size`` episodes of each problem (episode ``i`` belongs to group ``i // group_size``), rewarded
    by ``reward_fn`` on each episode's final program."""
    jobs = [(g, p) for g, p in enumerate(problems) for _ in range(group_size)]
    lockstep = LockstepEngine(engine, seed, len(jobs))
    graph = build_training_graph(workflow, grader=grader, engine=lockstep)
    start = time.perf_counter()
    states = await run_lockstep(graph, [{"problem": p.model_dump()} for _, p in jobs], lockstep)
    episodes_s = time.perf_counter() - start
    start = time.perf_counter()
    rewards = await reward_fn.ascore_batch(
        [(p, final_program(p, s)) for (_, p), s in zip(jobs, states, strict=True)]
    )
    reward_s = time.perf_counter() - start
    episodes = [
        Episode(
            index=i,
            group=g,
            problem=p,
            state=s,
            reward=r,
            passed=bool(r.details.get("passed", s.get("passed"))),
            masked=request_failure(p.task_id, s),
        )
        for i, ((g, p), s, r) in enumerate(zip(jobs, states, rewards, strict=True))
    ]
    seconds = {"generate": lockstep.generate_s, "episodes": episodes_s, "reward": reward_s}
    return RolloutBatch(episodes, lockstep.generated_tokens, lockstep.waves, seconds)
