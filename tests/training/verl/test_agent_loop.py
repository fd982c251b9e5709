"""The verl agent-loop adapter, constructed the way verl's AgentLoopWorker does, over a scripted server."""

from __future__ import annotations

from typing import Any

import hydra
import pandas as pd
import pytest
from omegaconf import OmegaConf
from verl.experimental.agent_loop.agent_loop import AgentLoopOutput, DictConfigWrap, _agent_loop_registry
from verl.utils.dataset.rl_dataset import RLHFDataset
from verl.workers.rollout.replica import TokenOutput

from coding_framework.llm.base import EngineError, SamplingParams
from coding_framework.problems.prompts import generation_messages
from coding_framework.testing.engine import tiny_tokenizer
from coding_framework.testing.verl_server import ScriptedServerManager
from coding_framework.training.verl.agent_loop import (
    AGENT_NAME,
    CodingAgentLoop,
    ServerManagerEngine,
    problem_from_row,
    verl_dataset_rows,
    write_verl_dataset,
)
from coding_framework.training.verl.interop import from_agent_loop_output
from tests.training._episodes import ADD, RIGHT, WRONG

VERL_SAMPLING = {"temperature": 0.9, "top_p": 0.95, "top_k": -1, "repetition_penalty": 1.0, "logprobs": True}


def _loop(server: ScriptedServerManager, prompt_length: int = 256, response_length: int = 512,
          **settings: object) -> CodingAgentLoop:
    """Instantiate from verl's registry entry with the arguments AgentLoopWorker._run_agent_loop passes."""
    rollout = {"prompt_length": prompt_length, "response_length": response_length}
    config = OmegaConf.create({"actor_rollout_ref": {"rollout": rollout}, "data": {},
                               AGENT_NAME: {"graph": None, **settings}})
    return hydra.utils.instantiate(
        _agent_loop_registry[AGENT_NAME], trainer_config=DictConfigWrap(config), server_manager=server,
        tokenizer=server.tokenizer, processor=None, dataset_cls=RLHFDataset,
        data_config=DictConfigWrap(config.data),
    )


def _row(uid: str = "uid-7") -> dict:
    """A dataset row as the worker hands it to ``run``: the parquet columns plus raw_prompt and uid."""
    row = verl_dataset_rows([ADD])[0]
    return {**row, "raw_prompt": row["prompt"], "uid": uid, "index": 0}


def test_registered_under_its_name() -> None:
    target = "coding_framework.training.verl.agent_loop.CodingAgentLoop"
    assert _agent_loop_registry[AGENT_NAME] == {"_target_": target}
    loop = _loop(ScriptedServerManager(tiny_tokenizer()))
    assert isinstance(loop, CodingAgentLoop)
    assert loop.resources.role == "generator" and loop.resources.workflow.graph.max_rounds == 3


async def test_run_returns_the_episode_as_an_agent_loop_output() -> None:
    server = ScriptedServerManager(tiny_tokenizer(), [WRONG, RIGHT])
    out = await _loop(server).run(dict(VERL_SAMPLING), **_row())
    assert isinstance(out, AgentLoopOutput)
    tok = server.tokenizer
    first, second = server.requests
    # the prompt is the rendered task, exactly what the server was sent first
    assert out.prompt_ids == first["prompt_ids"]
    rendered = tok.apply_chat_template(generation_messages(ADD), tokenize=False, add_generation_prompt=True)
    assert out.prompt_ids == tok(rendered, add_special_tokens=False)["input_ids"]
    # token-in/token-out: the second request is the trajectory's own prefix, never re-tokenized
    traj = from_agent_loop_output(out)
    call1, call2 = traj.calls
    assert second["prompt_ids"] == traj.ids[: len(traj.prompt_ids) + call2.start]
    answer1 = tok(WRONG, add_special_tokens=False)["input_ids"] + [tok.convert_tokens_to_ids("<|im_end|>")]
    assert traj.response_ids[call1.start : call1.end] == answer1
    assert out.response_logprobs[: call1.end] == [-0.25 * ((len(out.prompt_ids) + i) % 5 + 1)
                                                  for i in range(call1.end)]
    assert sum(out.response_mask) == call1.length + call2.length and out.response_mask[-1] == 1
    assert traj.stop_reasons == ["eos", "eos"] and traj.policy_versions == ["step-3", "step-3"]
    # the span of weight versions verl's V1 trainer bounds and reports (both calls: step 3)
    assert (out.extra_fields["min_global_steps"], out.extra_fields["max_global_steps"]) == (3, 3)
    # verl's sampling settings are passed through, with logprobs forced on and a token cap
    assert first["sampling_params"] == {**VERL_SAMPLING, "logprobs": True, "max_tokens": 512}
    assert first["request_id"] == second["request_id"]  # one sticky session per episode
    # rewarded here (passed on the revision), grouped by verl's uid
    assert out.reward_score == pytest.approx(traj.reward) and out.reward_score > 0.7
    assert traj.group_id == "uid-7" and traj.task_id == "t/add"
    assert traj.metadata["passed"] is True and traj.metadata["response_budget_exhausted"] is False
    assert out.num_turns == 4 and out.metrics.generate_sequences > 0
    assert out.as_dict()["rm_scores"][-1] == pytest.approx(out.reward_score)


def test_the_episodes_span_covers_every_calls_weight_version() -> None:
    engine = ServerManagerEngine(None, tiny_tokenizer(), {}, prompt_length=8, response_length=8)
    assert (engine.min_global_steps, engine.max_global_steps) == (None, None)
    for low, high in ((4, 4), (3, 5), (None, None)):
        engine._span(low, high)
    assert (engine.min_global_steps, engine.max_global_steps) == (3, 5)


class KeywordRecorder(ScriptedServerManager):
    """Also records the extra keywords verl's client would forward to the server's ``generate``."""

    async def generate(self, request_id: str, **kwargs: Any) -> TokenOutput:
        extra = {k: v for k, v in kwargs.items() if k not in ("prompt_ids", "sampling_params")}
        out = await super().generate(request_id, **kwargs)
        self.requests[-1]["extra"] = extra
        return out


@pytest.mark.parametrize("send_role", [True, False])
async def test_the_calls_role_reaches_the_server_only_when_asked(send_role: bool) -> None:
    """verl's own vLLM server takes no ``role`` keyword: it is sent only with ``send_role``."""
    server = KeywordRecorder(tiny_tokenizer(), [WRONG, RIGHT])
    await _loop(server, **({"send_role": True} if send_role else {})).run(dict(VERL_SAMPLING), **_row())
    assert [r["extra"] for r in server.requests] == [{"role": "generator"} if send_role else {}] * 2


async def test_the_response_budget_ends_the_episode_at_its_last_round() -> None:
    server = ScriptedServerManager(tiny_tokenizer(), [WRONG, RIGHT])
    out = await _loop(server, response_length=40).run(dict(VERL_SAMPLING), **_row())
    traj = from_agent_loop_output(out)
    assert len(server.requests) == 1 and traj.num_turns == 1
    assert len(out.response_ids) <= 40 and server.requests[0]["sampling_params"]["max_tokens"] == 40
    assert traj.metadata["response_budget_exhausted"] is True and traj.metadata["passed"] is False
    assert out.reward_score < 0.7  # the wrong draft is what got graded


async def test_a_prompt_longer_than_verls_limit_is_refused() -> None:
    loop = _loop(ScriptedServerManager(tiny_tokenizer(), [RIGHT]), prompt_length=10)
    with pytest.raises(EngineError, match=r"rollout\.prompt_length=10"):
        await loop.run(dict(VERL_SAMPLING), **_row())


def test_engine_adapter_errors_and_sync_calls() -> None:
    tok = tiny_tokenizer()
    engine = ServerManagerEngine(ScriptedServerManager(tok, [RIGHT]), tok, {"temperature": 1.0},
                                 prompt_length=64, response_length=64)
    gen = engine.generate([1, 5, 6], SamplingParams(max_new_tokens=8))  # outside an event loop
    assert len(gen.token_ids) == 8 and gen.stop_reason == "length" and gen.text == tok.decode(gen.token_ids)

    class NoLogprobs:
        async def generate(self, request_id, *, prompt_ids, sampling_params, **kw):
            return TokenOutput(token_ids=[5, 6], log_probs=None)

    engine = ServerManagerEngine(NoLogprobs(), tok, {}, prompt_length=64, response_length=64)
    with pytest.raises(EngineError, match="calculate_log_probs=True"):
        engine.generate([1, 2], SamplingParams())


def test_dataset_rows_round_trip_through_parquet_and_rlhf_dataset(tmp_path) -> None:
    path = write_verl_dataset([ADD], tmp_path / "train.parquet")
    row = pd.read_parquet(path).iloc[0].to_dict()
    assert problem_from_row(row) == ADD and row["agent_name"] == AGENT_NAME
    config = OmegaConf.create({"prompt_key": "prompt", "filter_overlong_prompts": False})
    item = RLHFDataset([str(path)], tiny_tokenizer(), config)[0]
    assert list(item["raw_prompt"]) == generation_messages(ADD) and problem_from_row(item) == ADD
    with pytest.raises(ValueError, match="write_verl_dataset"):
        problem_from_row({"extra_info": {}})
