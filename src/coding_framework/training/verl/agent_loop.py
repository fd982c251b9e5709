"""Run our training graph as a verl agent loop, so verl's FSDP trainer on a Ray cluster trains on it.

verl instantiates the registered agent loop once per sample and calls ``run``; we run one episode of
``build_training_graph`` (generate -> execute -> review -> revise) for the sample's problem. Every
Generator call goes token-in/token-out through ``ServerManagerEngine`` to verl's rollout replicas
(vLLM/SGLang, via its ``LLMServerClient``), the episode is rewarded with our reward functions, and the
result is returned as the ``AgentLoopOutput`` of ``interop.to_agent_loop_output``: the same token
ids, mask and logprobs our own trainer would use, with ``reward_score`` set (verl then skips its reward
manager) and our call spans / task id / metadata in ``extra_fields`` (they reach ``non_tensor_batch``).
The metadata carries the episode's wall-clock span (``episode_began`` / ``episode_ended``, Unix seconds),
so the time spent in episodes can be told apart from the time spent in verl's machinery around them.

Use it (the module must be importable on every worker, e.g. ``pip install -e .``)::

    # agent_loops.yaml
    - name: coding_framework
      _target_: coding_framework.training.verl.agent_loop.CodingAgentLoop

    python -m verl.trainer.main_ppo \\
      data.train_files=data/train.parquet data.val_files=data/val.parquet \\   # write_verl_dataset(...)
      actor_rollout_ref.rollout.mode=async actor_rollout_ref.rollout.name=vllm \\
      actor_rollout_ref.rollout.calculate_log_probs=True \\
      actor_rollout_ref.rollout.agent.agent_loop_config_path=agent_loops.yaml \\
      actor_rollout_ref.rollout.agent.default_agent_loop=coding_framework \\
      actor_rollout_ref.rollout.prompt_length=1024 actor_rollout_ref.rollout.response_length=4096 \\
      algorithm.adv_estimator=grpo actor_rollout_ref.rollout.n=8 \\
      +coding_framework.agents=agents +coding_framework.graph=graph \\
      +coding_framework.sandbox=sandbox +coding_framework.rewards=reward_weights

Sampling (temperature, top-p, top-k) follows verl's rollout config, as its trainer assumes; the
Generator's ``max_new_tokens`` and stop strings still apply, capped so the whole multi-turn response
fits ``rollout.response_length``. When it no longer does, the episode ends at its last complete round.
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from uuid import uuid4

import pandas as pd
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopMetrics, AgentLoopOutput, register

from coding_framework.agents.executor import assemble_program
from coding_framework.config import RewardConfig, load_config
from coding_framework.config.graph import WorkflowConfig
from coding_framework.grading import Grader
from coding_framework.graphs import build_training_graph
from coding_framework.llm.base import EngineError, FinishReason, Generation, SamplingParams
from coding_framework.problems import Problem
from coding_framework.problems.prompts import generation_messages
from coding_framework.rewards import CompositeReward
from coding_framework.training.rollouts.scoring import round_penalized
from coding_framework.training.trajectory import trajectories_from_episode
from coding_framework.training.verl.interop import to_agent_loop_output

__all__ = ["AGENT_NAME", "DATA_SHA_KEY", "CodingAgentLoop", "ResponseBudgetExhausted", "ServerManagerEngine",
           "problem_from_row", "verl_dataset_rows", "write_rows", "write_verl_dataset"]

AGENT_NAME = "coding_framework"


class ResponseBudgetExhausted(EngineError):
    """The multi-turn response already fills ``rollout.response_length``: no room for another turn."""


class ServerManagerEngine:
    """A ``TokenEngine`` over verl's ``LLMServerClient`` for one episode (one sticky ``request_id``).

    ``sampling_params`` are verl's (temperature, top_p, top_k, ...); ``max_tokens`` per call is the
    Generator's ``max_new_tokens`` capped by what is left of ``response_length`` counted from the first
    prompt. ``prompt_length`` bounds that first prompt, as verl pads prompts to it. With ``send_role``
    each call passes its ``role`` on (verl's client forwards extra keywords to the server's ``generate``),
    so servers with per-role adapters decode it through that role's; verl's own vLLM server takes no such
    keyword, hence off by default.
    """

    def __init__(self, server_manager: Any, tokenizer: Any, sampling_params: Mapping[str, Any], *,
                 prompt_length: int, response_length: int, request_id: str | None = None,
                 send_role: bool = False) -> None:
        self.server_manager = server_manager
        self.tokenizer = tokenizer
        self.sampling_params = dict(sampling_params)
        self.prompt_length = prompt_length
        self.response_length = response_length
        self.request_id = request_id or uuid4().hex
        self.send_role = send_role
        self.policy_version = "verl"
        self.generate_s = 0.0
        # The weight versions (trainer steps) the episode's calls were generated with: verl's V1 trainer
        # bounds and reports staleness from them (``min_global_steps`` / ``max_global_steps``).
        self.min_global_steps: int | None = None
        self.max_global_steps: int | None = None
        self._first_prompt: int | None = None
        self._special = frozenset(tokenizer.all_special_ids)

    async def agenerate(self, prompt_ids: Sequence[int], params: SamplingParams) -> Generation:
        if self._first_prompt is None:
            if len(prompt_ids) > self.prompt_length:
                raise EngineError(f"the first prompt has {len(prompt_ids)} tokens, more than "
                                  f"rollout.prompt_length={self.prompt_length}; raise it")
            self._first_prompt = len(prompt_ids)
        room = self.response_length - (len(prompt_ids) - self._first_prompt)
        if room < 1:
            used = len(prompt_ids) - self._first_prompt
            raise ResponseBudgetExhausted(f"the response already has {used} of "
                                          f"rollout.response_length={self.response_length} tokens")
        max_tokens = min(params.max_new_tokens, room)
        sampling = {**self.sampling_params, "logprobs": True, "max_tokens": max_tokens}
        if params.stop:
            sampling["stop"] = list(params.stop)
        extra = {"role": params.role} if self.send_role else {}
        start = time.perf_counter()
        out = await self.server_manager.generate(request_id=self.request_id, prompt_ids=list(prompt_ids),
                                                 sampling_params=sampling, **extra)
        self.generate_s += time.perf_counter() - start
        if out.stop_reason == "aborted":
            raise EngineError("verl aborted the generation (weights were being updated)")
        if out.log_probs is None or len(out.log_probs) != len(out.token_ids):
            raise EngineError("the rollout server returned no per-token logprobs; set "
                              "actor_rollout_ref.rollout.calculate_log_probs=True")
        step = out.extra_fields.get("global_steps")
        self.policy_version = f"step-{step}" if step is not None else "verl"
        fields = out.extra_fields
        self._span(fields.get("min_global_steps", step), fields.get("max_global_steps", step))
        ids = list(out.token_ids)
        return Generation(token_ids=ids, logprobs=list(out.log_probs), policy_version=self.policy_version,
                          text=self.tokenizer.decode(ids, skip_special_tokens=True),
                          stop_reason=self._stop_reason(ids, max_tokens))

    def _span(self, low: int | None, high: int | None) -> None:
        """Widen the episode's span of weight versions by one call's."""
        if low is not None:
            self.min_global_steps = low if self.min_global_steps is None else min(self.min_global_steps, low)
        if high is not None:
            self.max_global_steps = high if self.max_global_steps is None else max(self.max_global_steps,
                                                                                  high)

    def _stop_reason(self, ids: list[int], max_tokens: int) -> FinishReason:
        # The server stops on a special token only when it is an end-of-sequence token.
        if ids and ids[-1] in self._special:
            return "eos"
        return "length" if len(ids) >= max_tokens else "stop"

    def generate(self, prompt_ids: Sequence[int], params: SamplingParams) -> Generation:
        """Blocking call for code outside an event loop (the agent loop itself awaits ``agenerate``)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.agenerate(prompt_ids, params))
        raise EngineError("ServerManagerEngine.generate was called inside a running event loop; "
                          "await agenerate instead")

    def generate_batch(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[Generation]:
        return [self.generate(p, params) for p in prompts]


class _Resources:
    """What the episodes of a worker process share: the workflow config, the sandboxed grader, the reward."""

    def __init__(self, settings: Mapping[str, str | None]) -> None:
        self.workflow = WorkflowConfig.load(settings.get("agents"), settings.get("graph"),
                                            settings.get("sandbox"))
        self.grader = Grader(self.workflow.sandbox)
        self.reward = CompositeReward(load_config(RewardConfig, settings.get("rewards")), grader=self.grader)
        self.role = settings.get("trained_role") or "generator"
        self.round_penalty = float(settings.get("round_penalty") or 0.0)


@functools.cache
def _resources(settings_json: str) -> _Resources:
    return _Resources(json.loads(settings_json))


def problem_from_row(row: Mapping[str, Any]) -> Problem:
    """The ``Problem`` a dataset row written by ``verl_dataset_rows`` carries in ``extra_info.problem``."""
    info = row.get("extra_info") or {}
    if "problem" not in info:
        raise ValueError("the dataset row has no extra_info.problem: write the dataset with "
                         "coding_framework.training.verl.agent_loop.write_verl_dataset")
    raw = info["problem"]
    return Problem.model_validate_json(raw) if isinstance(raw, str) else Problem.model_validate(raw)


@register(AGENT_NAME)
class CodingAgentLoop(AgentLoopBase):
    """One training-graph episode per sample. Settings come from the trainer config's ``coding_framework``
    section: YAML paths ``agents``, ``graph``, ``sandbox``, ``rewards`` (each optional), ``trained_role``,
    ``round_penalty`` (the reward loses it per revision, as the local trainer's ``reward.round_penalty``),
    and ``send_role`` (pass each call's role to the rollout servers; only ours accept it)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # The episode starts here: verl builds one loop per sample right before ``run``, and the first one
        # in a worker builds the shared resources (sandboxed grader, reward), which is episode work too.
        self.began = time.time()  # wall clock, comparable across the workers' processes on one machine
        super().__init__(*args, **kwargs)
        section = self.config.get(AGENT_NAME) or {}
        keys = ("agents", "graph", "sandbox", "rewards", "trained_role", "round_penalty")
        self.settings = {k: (str(section[k]) if section.get(k) is not None else None) for k in keys}
        self.resources = _resources(json.dumps(self.settings, sort_keys=True))
        self.send_role = bool(section.get("send_role", False))

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        problem = problem_from_row(kwargs)
        res = self.resources
        engine = ServerManagerEngine(self.server_manager, self.tokenizer, sampling_params,
                                     prompt_length=self.rollout_config.prompt_length,
                                     response_length=self.rollout_config.response_length,
                                     send_role=self.send_role)
        graph = build_training_graph(res.workflow, grader=res.grader, engine=engine,
                                     checkpointer=InMemorySaver())
        thread: RunnableConfig = {"configurable": {"thread_id": engine.request_id}}
        truncated = False
        try:
            state = await graph.ainvoke({"problem": problem.model_dump()}, thread)
        except ResponseBudgetExhausted:
            state, truncated = dict((await graph.aget_state(thread)).values), True
        start = time.perf_counter()
        program = assemble_program(problem, state.get("code", ""))
        (reward,) = await res.reward.ascore_batch([(problem, program)])
        score_s = time.perf_counter() - start
        group = kwargs.get("uid")
        value = round_penalized(reward.value, int(state.get("round", 0)), res.round_penalty)
        (traj,) = trajectories_from_episode(
            state, (res.role,), reward=value, group_id=str(group) if group is not None else None,
            metadata={"raw_reward": reward.raw, "response_budget_exhausted": truncated,
                      "episode_began": self.began, "episode_ended": time.time()},
        )
        output = to_agent_loop_output(traj, AgentLoopMetrics(generate_sequences=engine.generate_s,
                                                             compute_score=score_s))
        output.extra_fields.update(min_global_steps=engine.min_global_steps,
                                   max_global_steps=engine.max_global_steps)
        return output


def verl_dataset_rows(problems: Sequence[Problem], split: str = "train") -> list[dict[str, Any]]:
    """Rows for verl's ``RLHFDataset``: the Generator's first messages as ``prompt``, the problem in
    ``extra_info.problem`` (JSON), ``agent_name`` set to this loop."""
    return [
        {
            "data_source": f"coding_framework/{p.source or 'problems'}",
            "prompt": generation_messages(p),
            "agent_name": AGENT_NAME,
            "ability": "coding",
            "reward_model": {"style": "rule", "ground_truth": p.task_id},
            "extra_info": {"index": i, "split": split, "task_id": p.task_id, "problem": p.model_dump_json()},
        }
        for i, p in enumerate(problems)
    ]


DATA_SHA_KEY = b"coding_framework.data_sha256"


def write_verl_dataset(problems: Sequence[Problem], path: str | Path, split: str = "train",
                       data_sha256: str | None = None) -> Path:
    """Write ``verl_dataset_rows`` as the parquet file ``data.train_files`` / ``data.val_files`` name; the
    run's data hash (``training.run.data``'s manifest) goes into the file's metadata under
    ``DATA_SHA_KEY``."""
    return write_rows(verl_dataset_rows(problems, split), path, data_sha256)


def write_rows(rows: Sequence[Mapping[str, Any]], path: str | Path, data_sha256: str | None = None) -> Path:
    """Dataset rows as a parquet file, ``data_sha256`` in its metadata under ``DATA_SHA_KEY``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pandas(pd.DataFrame(list(rows)))
    if data_sha256 is not None:
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), DATA_SHA_KEY: data_sha256})
    pq.write_table(table, out)
    return out
