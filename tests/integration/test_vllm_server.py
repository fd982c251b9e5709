"""A real vLLM server (CPU, .venv-vllm) behind OpenAICompatibleEngine: exact ids, logprobs, multi-turn."""

from __future__ import annotations

import asyncio
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from coding_framework.llm.base import EngineError, Generation, SamplingParams
from coding_framework.llm.openai_compat import OpenAICompatibleEngine
from coding_framework.llm.vllm_server import VENV_ENV, VLLMServer
from coding_framework.problems import Problem
from coding_framework.problems.prompts import generation_messages

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SAMPLE = SamplingParams(max_new_tokens=24, temperature=1.0, seed=0)
ADD = {
    "task_id": "t/add",
    "prompt": "Write a function add(a, b) returning a + b.",
    "entry_point": "add",
    "test_code": "assert add(1, 2) == 3\nassert add(-1, 1) == 0\n",
    "prompt_is_code": False,
}
# The prompt format the embedded model was fine-tuned on.
USER = generation_messages(Problem(**ADD))
# float32 on both sides; the rest is kernel summation order.
LOGPROB_TOL = 2e-3


@pytest.fixture(scope="module")
def engine(vllm_server: VLLMServer) -> Iterator[OpenAICompatibleEngine]:
    eng = vllm_server.engine(timeout_s=120)
    yield eng
    eng.close()


@pytest.fixture(scope="module")
def hf_model(vllm_model_dir: Path) -> Any:
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(vllm_model_dir, dtype="float32").eval()


def _prompt(engine: OpenAICompatibleEngine, messages: list[dict[str, str]]) -> list[int]:
    return list(engine.tokenizer.apply_chat_template(messages, add_generation_prompt=True)["input_ids"])


def _teacher_forced(model: Any, prompt: Sequence[int], generated: Sequence[int]) -> list[float]:
    """transformers' log p(generated[t] | prompt + generated[:t]) from one forward pass."""
    import torch

    ids = torch.tensor([[*prompt, *generated]])  # (1, T)
    with torch.inference_mode():
        logits = model(input_ids=ids).logits[0, len(prompt) - 1 : -1].float()  # (G, V)
    return torch.log_softmax(logits, -1).gather(-1, ids[0, len(prompt) :].unsqueeze(-1)).squeeze(-1).tolist()


def _check(engine: OpenAICompatibleEngine, gen: Generation) -> None:
    assert gen.token_ids, "no tokens generated"
    assert engine.tokenizer.decode(gen.token_ids, skip_special_tokens=True) == gen.text
    assert all(math.isfinite(lp) and lp <= 0 for lp in gen.logprobs)
    assert gen.policy_version == engine.model


def test_health_and_served_models(engine: OpenAICompatibleEngine, vllm_server: VLLMServer) -> None:
    assert engine.health() is True
    assert engine.served_models() == [vllm_server.name]


def test_generate_returns_exact_ids_and_the_models_logprobs(
    engine: OpenAICompatibleEngine, hf_model: Any
) -> None:
    prompt = _prompt(engine, USER)
    gen = engine.generate(prompt, SAMPLE)
    _check(engine, gen)
    assert gen.stop_reason in ("length", "eos")
    assert len(gen.token_ids) == SAMPLE.max_new_tokens or gen.stop_reason == "eos"
    reference = _teacher_forced(hf_model, prompt, gen.token_ids)
    assert max(abs(a - b) for a, b in zip(gen.logprobs, reference, strict=True)) < LOGPROB_TOL


def test_same_seed_same_sample_and_greedy_is_deterministic(engine: OpenAICompatibleEngine) -> None:
    prompt = _prompt(engine, USER)
    assert engine.generate(prompt, SAMPLE).token_ids == engine.generate(prompt, SAMPLE).token_ids
    greedy = SamplingParams(max_new_tokens=12, temperature=0.0)
    assert engine.generate(prompt, greedy).token_ids == engine.generate(prompt, greedy).token_ids


def test_multi_turn_continuation_is_token_in_token_out(engine: OpenAICompatibleEngine, hf_model: Any) -> None:
    from coding_framework.llm.session import TokenSession

    # The session appends generated ids verbatim and renders only new messages: history is never re-tokenized.
    session = TokenSession(engine.tokenizer)
    session.add_messages(USER)
    first = session.generate(engine, SAMPLE)
    session.add_messages([{"role": "user", "content": "Now make it handle lists."}])
    second = session.generate(engine, SamplingParams(max_new_tokens=16, temperature=1.0, seed=1))
    for gen in (first, second):
        _check(engine, gen)
    ids, mask = session.ids, session.loss_mask
    assert sum(mask) == len(first.token_ids) + len(second.token_ids)
    # vLLM's logprobs for both turns equal transformers' over the one exact token sequence.
    start = mask.index(1)
    reference = _teacher_forced(hf_model, ids[:start], ids[start:])
    pairs = [
        (lp, ref) for lp, ref, m in zip(session.logprobs[start:], reference, mask[start:], strict=True) if m
    ]
    assert max(abs(lp - ref) for lp, ref in pairs) < LOGPROB_TOL


def test_stop_string_ends_generation_and_text_still_decodes_the_ids(engine: OpenAICompatibleEngine) -> None:
    prompt = _prompt(engine, USER)
    free = engine.generate(prompt, SamplingParams(max_new_tokens=64, temperature=0.0))
    assert len(free.text) >= 4, f"the model answered {free.text!r}"
    # Two characters greedy decoding is known to produce halfway through: it must stop there.
    stop = free.text[len(free.text) // 2 - 2 : len(free.text) // 2]
    gen = engine.generate(prompt, SamplingParams(max_new_tokens=64, temperature=0.0, stop=(stop,)))
    _check(engine, gen)
    assert gen.stop_reason == "stop"
    assert gen.token_ids == free.token_ids[: len(gen.token_ids)]
    assert stop in gen.text and stop not in engine.tokenizer.decode(gen.token_ids[:-1])


def test_batch_and_async_requests_run_together(engine: OpenAICompatibleEngine) -> None:
    prompt = _prompt(engine, USER)
    batch = engine.generate_batch([prompt] * 4, SamplingParams(max_new_tokens=8, temperature=1.0, seed=3))
    for gen in batch:
        _check(engine, gen)
    assert batch[0].token_ids == engine.generate(prompt, SamplingParams(max_new_tokens=8, seed=3)).token_ids

    async def together() -> list[Generation]:
        return list(
            await asyncio.gather(
                *(engine.agenerate(prompt, SamplingParams(max_new_tokens=8, seed=s)) for s in range(3))
            )
        )

    for gen in asyncio.run(together()):
        _check(engine, gen)


def test_chat_uses_the_same_template_as_the_local_tokenizer(engine: OpenAICompatibleEngine) -> None:
    gen = engine.chat(USER, SamplingParams(max_new_tokens=8, temperature=1.0, seed=4))
    _check(engine, gen)
    assert gen.extra["prompt_token_ids"] == _prompt(engine, USER)


def test_wrong_model_name_lists_the_served_one(vllm_server: VLLMServer) -> None:
    with (
        OpenAICompatibleEngine(f"{vllm_server.url}/v1", "nope", tokenizer_path=vllm_server.model_dir) as eng,
        pytest.raises(EngineError, match=rf"does not serve model 'nope'; it serves '{vllm_server.name}'"),
    ):
        eng.generate([1, 2, 3], SAMPLE)


def test_prompt_longer_than_the_context_is_rejected_with_vllms_reason(engine: OpenAICompatibleEngine) -> None:
    with pytest.raises(EngineError, match=r"rejected POST /completions \(400\).*2048"):
        engine.generate([5] * 2100, SAMPLE)


# -- the LangGraph workflow through this backend ----------------------------------------------------------


def _workflow(rounds: int) -> Any:
    from coding_framework.config.agents import AgentsConfig, ReviewerConfig
    from coding_framework.config.graph import GraphConfig, WorkflowConfig

    return WorkflowConfig(
        agents=AgentsConfig(reviewer=ReviewerConfig(backend="static")), graph=GraphConfig(max_rounds=rounds)
    )


async def test_inference_graph_runs_an_episode_through_vllm(vllm_server: VLLMServer) -> None:
    from coding_framework.config.llm import LLMConfig, SamplingConfig
    from coding_framework.grading import Grader
    from coding_framework.graphs import build_inference_graph
    from coding_framework.llm.factory import build_chat_model

    llm = LLMConfig(
        model=f"openai:{vllm_server.url}/v1@{vllm_server.name}",
        tokenizer=f"local:{vllm_server.model_dir}",
        sampling=SamplingConfig(max_new_tokens=48, seed=0),
    )
    chat = build_chat_model(llm)
    with Grader() as grader:
        graph = build_inference_graph(_workflow(rounds=2), grader=grader, chat_model=chat)
        out = await graph.ainvoke({"problem": ADD})
    # The episode ran on vLLM's answers and ended by the workflow's own rules, whatever the model wrote.
    assert out["stop_reason"] in ("passed", "max_rounds")
    assert out["passed"] is (out["stop_reason"] == "passed")
    assert [r["round"] for r in out["rounds"]] == list(range(1, out["round"] + 1))
    assert all(r["answer"] and r["execution"] for r in out["rounds"])
    assert out["tokens_used"] > 0
    chat.engine.close()


async def test_training_graph_records_vllm_logprobs_of_the_exact_trajectory(
    engine: OpenAICompatibleEngine, hf_model: Any
) -> None:
    from coding_framework.grading import Grader
    from coding_framework.graphs import build_training_graph

    with Grader() as grader:
        graph = build_training_graph(_workflow(rounds=2), grader=grader, engine=engine)
        out = await graph.ainvoke({"problem": ADD})
    ids, mask, logprobs = (out["trajectory"][k] for k in ("ids", "loss_mask", "logprobs"))
    assert len(out["calls"]) == 2 and sum(mask) == sum(len(c["response_ids"]) for c in out["calls"])
    # Every generated token's logprob, recomputed by transformers over the whole two-turn sequence.
    start = mask.index(1)
    reference = _teacher_forced(hf_model, ids[:start], ids[start:])
    generated = [(lp, ref) for lp, ref, m in zip(logprobs[start:], reference, mask[start:], strict=True) if m]
    assert max(abs(lp - ref) for lp, ref in generated) < LOGPROB_TOL


def test_a_sigterm_to_the_cli_stops_the_vllm_server_it_started(vllm_venv: Path, tmp_path: Path) -> None:
    """`kill` (or a scheduler's SIGTERM) of `evaluate --model vllm:...` leaves no vLLM process behind."""
    env = {**os.environ, VENV_ENV: str(vllm_venv)}
    command = [sys.executable, "-m", "coding_framework.cli", "evaluate", "--benchmark", "humaneval",
               "--model", "vllm:embedded", "--limit", "2", "--max-rounds", "1",
               "--results", str(tmp_path / "r.jsonl")]
    cli = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def servers() -> list[int]:
        found = []
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                args = cmdline.read_bytes().split(b"\0")
                stat = (cmdline.parent / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if b"vllm.entrypoints.openai.api_server" in b" ".join(args) and int(stat[1]) == cli.pid:
                found.append(int(cmdline.parent.name))
        return found

    deadline = time.monotonic() + 600
    while not servers():
        assert cli.poll() is None and time.monotonic() < deadline, "the CLI never started its vLLM server"
        time.sleep(0.5)
    group = os.getpgid(servers()[0])
    cli.send_signal(signal.SIGTERM)
    assert cli.wait(timeout=120) == 128 + signal.SIGTERM
    for _ in range(60):
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return
        time.sleep(1)
    os.killpg(group, signal.SIGKILL)
    raise AssertionError("the vLLM server outlived the CLI that started it")
