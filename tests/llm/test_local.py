"""LocalEngine: batched sampling, exact logprobs, stop conditions, seeds, async batching, weight updates."""

from __future__ import annotations

import asyncio
import copy

import pytest
import torch

from coding_framework.llm.base import EngineError, SamplingParams, TokenEngine
from coding_framework.llm.local import LocalEngine, resolve_device

PROMPTS = ["def add(a, b):\n    return", "class Stack:\n    def push(self, x):\n        self.items", "print("]


def test_is_a_token_engine(engine) -> None:
    assert isinstance(engine, TokenEngine)


def test_generation_fields_align(engine, encode, tiny_tokenizer) -> None:
    gen = engine.generate(encode(PROMPTS[0]), SamplingParams(max_new_tokens=12, temperature=1.0, seed=0))
    assert len(gen.token_ids) == len(gen.logprobs) == 12
    assert gen.stop_reason == "length"
    assert gen.text == tiny_tokenizer.decode(gen.token_ids, skip_special_tokens=True)
    assert gen.policy_version == "v0"
    assert all(lp <= 0.0 for lp in gen.logprobs)


@pytest.mark.parametrize("temperature,top_p", [(0.0, 1.0), (1.0, 1.0), (0.7, 0.9), (1.5, 0.5)])
def test_logprobs_equal_teacher_forced_at_temperature_one(engine, encode, temperature, top_p) -> None:
    prompts = [encode(p) for p in PROMPTS]  # different lengths: left padding is exercised
    params = SamplingParams(max_new_tokens=20, temperature=temperature, top_p=top_p, seed=3)
    for prompt, gen in zip(prompts, engine.generate_batch(prompts, params), strict=True):
        recomputed = engine.teacher_forced_logprobs(prompt + gen.token_ids, len(prompt))
        assert recomputed == pytest.approx(gen.logprobs, abs=1e-4)


def test_logprobs_are_of_the_untempered_distribution(engine, encode) -> None:
    prompt = encode(PROMPTS[0])
    hot = engine.generate(prompt, SamplingParams(max_new_tokens=1, temperature=3.0, seed=1))
    logits = engine.model(input_ids=torch.tensor([prompt])).logits[0, -1].float()
    expected = torch.log_softmax(logits, -1)[hot.token_ids[0]].item()
    assert hot.logprobs[0] == pytest.approx(expected, abs=1e-5)


def test_greedy_batch_equals_one_by_one(engine, encode) -> None:
    params = SamplingParams(max_new_tokens=15, temperature=0.0)
    prompts = [encode(p) for p in PROMPTS]
    batch = engine.generate_batch(prompts, params)
    for prompt, gen in zip(prompts, batch, strict=True):
        assert engine.generate(prompt, params).token_ids == gen.token_ids


def test_repeated_and_uneven_prompts_decode_like_single_rows(engine, encode) -> None:
    """Identical prompts share one prefill and a much longer prompt decodes in a batch of its own."""
    short, long = encode(PROMPTS[0]), encode(PROMPTS[1] * 8)
    prompts = [short, long, short, encode(PROMPTS[2]), short]
    params = SamplingParams(max_new_tokens=12, temperature=0.0)
    for prompt, gen in zip(prompts, engine.generate_batch(prompts, params), strict=True):
        assert gen.token_ids == engine.generate(prompt, params).token_ids
        recomputed = engine.teacher_forced_logprobs(prompt + gen.token_ids, len(prompt))
        assert recomputed == pytest.approx(gen.logprobs, abs=1e-4)


def test_seeds_reproduce_and_differ(engine, encode) -> None:
    prompt = encode(PROMPTS[1])
    a = engine.generate(prompt, SamplingParams(max_new_tokens=20, temperature=1.0, seed=7))
    b = engine.generate(prompt, SamplingParams(max_new_tokens=20, temperature=1.0, seed=7))
    c = engine.generate(prompt, SamplingParams(max_new_tokens=20, temperature=1.0, seed=8))
    assert a.token_ids == b.token_ids
    assert a.token_ids != c.token_ids


def test_batch_rows_get_independent_streams_and_row_zero_matches_single(engine, encode) -> None:
    prompt = encode(PROMPTS[1])  # the longest prompt, so row 0 has no padding
    params = SamplingParams(max_new_tokens=20, temperature=1.0, seed=11)
    rows = engine.generate_batch([prompt, prompt, encode(PROMPTS[2])], params)
    assert rows[0].token_ids == engine.generate(prompt, params).token_ids
    assert rows[0].token_ids != rows[1].token_ids


def test_top_p_tiny_is_greedy(engine, encode) -> None:
    prompt = encode(PROMPTS[0])
    nucleus = engine.generate(prompt, SamplingParams(max_new_tokens=10, temperature=1.0, top_p=1e-6, seed=5))
    greedy = engine.generate(prompt, SamplingParams(max_new_tokens=10, temperature=0.0))
    assert nucleus.token_ids == greedy.token_ids


def test_stop_string_ends_generation_and_stays_in_text(engine, encode, tiny_tokenizer) -> None:
    prompt = encode(PROMPTS[0])
    free = engine.generate(prompt, SamplingParams(max_new_tokens=30, temperature=0.0))
    stop = tiny_tokenizer.decode(free.token_ids[5:6])
    stopped = engine.generate(prompt, SamplingParams(max_new_tokens=30, temperature=0.0, stop=(stop,)))
    assert stopped.stop_reason == "stop"
    assert len(stopped.token_ids) <= 6
    assert stopped.token_ids == free.token_ids[: len(stopped.token_ids)]
    assert stop in stopped.text
    assert stop not in tiny_tokenizer.decode(stopped.token_ids[:-1])  # it stopped at the first match


def test_eos_ends_generation_and_is_kept_in_ids(tiny_model, tiny_tokenizer, encode) -> None:
    prompt = encode(PROMPTS[0])
    params = SamplingParams(max_new_tokens=8, temperature=0.0)
    free = LocalEngine(tiny_model, tiny_tokenizer, device="cpu").generate(prompt, params).token_ids
    # Declare the last new token of the greedy continuation an EOS: generation must end right there.
    k = max(j for j, t in enumerate(free) if t not in free[:j])
    model = copy.deepcopy(tiny_model)
    model.generation_config.eos_token_id = [free[k]]
    gen = LocalEngine(model, tiny_tokenizer, device="cpu").generate(prompt, params)
    assert gen.stop_reason == "eos"
    assert gen.token_ids == free[: k + 1]


def test_bad_prompts_are_clear_errors(engine, encode) -> None:
    with pytest.raises(EngineError, match="empty prompt"):
        engine.generate([], SamplingParams())
    with pytest.raises(EngineError, match="does not fit"):
        engine.generate([5] * 600, SamplingParams())


def test_generation_budget_is_capped_by_context(engine) -> None:
    gen = engine.generate([5] * 508, SamplingParams(max_new_tokens=50, temperature=0.0))
    assert len(gen.token_ids) == 4 and gen.stop_reason == "length"


def test_teacher_forced_start_is_checked(engine) -> None:
    with pytest.raises(ValueError, match="start"):
        engine.teacher_forced_logprobs([1, 2, 3], 0)


async def test_concurrent_agenerate_matches_generate(engine, encode) -> None:
    params = SamplingParams(max_new_tokens=12, temperature=1.0, seed=4)
    prompts = [encode(p) for p in PROMPTS] * 3
    results = await asyncio.gather(*(engine.agenerate(p, params) for p in prompts))
    for prompt, gen in zip(prompts, results, strict=True):
        assert gen.token_ids == engine.generate(prompt, params).token_ids


async def test_agenerate_does_not_block_the_event_loop(engine, encode) -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.001)
            ticks += 1

    task = asyncio.create_task(ticker())
    await engine.agenerate(encode(PROMPTS[0]), SamplingParams(max_new_tokens=200, temperature=1.0, seed=0))
    task.cancel()
    assert ticks >= 3


def test_policy_version_and_weight_updates(engine, encode) -> None:
    prompt = encode(PROMPTS[0])
    params = SamplingParams(max_new_tokens=10, temperature=0.0)
    before = engine.generate(prompt, params)
    engine.set_policy_version("v1")
    assert engine.generate(prompt, params).policy_version == "v1"
    state = {k: v.clone() for k, v in engine.model.state_dict().items()}
    torch.manual_seed(0)
    noisy = {k: v + 0.5 * torch.randn_like(v) for k, v in state.items()}
    try:
        engine.update_weights(noisy, "v2")
        after = engine.generate(prompt, params)
        assert after.policy_version == "v2"
        assert after.logprobs != before.logprobs
    finally:
        engine.update_weights(state, "v0")


def test_from_pretrained_round_trip(tmp_path, tiny_model, tiny_tokenizer, encode) -> None:
    tiny_model.save_pretrained(tmp_path)
    tiny_tokenizer.save_pretrained(tmp_path)
    loaded = LocalEngine.from_pretrained(tmp_path, device="cpu")
    params = SamplingParams(max_new_tokens=10, temperature=0.0)
    original = LocalEngine(tiny_model, tiny_tokenizer, device="cpu").generate(encode(PROMPTS[0]), params)
    again = loaded.generate(encode(PROMPTS[0]), params)
    assert again.token_ids == original.token_ids
    assert again.policy_version == tmp_path.name


def test_from_pretrained_needs_a_model_dir(tmp_path) -> None:
    with pytest.raises(EngineError, match="no config\\.json"):
        LocalEngine.from_pretrained(tmp_path)


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is present")
def test_cuda_without_cuda_is_a_clear_error() -> None:
    with pytest.raises(EngineError, match="CUDA is not available"):
        resolve_device("cuda")


async def test_mixed_requests_share_a_batch_and_leave_it_when_done(
    tiny_model, tiny_tokenizer, encode
) -> None:
    # Different lengths and sampling settings in one micro-batch: rows that finish early are pruned
    # from the KV cache while the others go on, and every row still matches a solo run exactly.
    prompts = [encode(p) for p in PROMPTS]
    params = [
        SamplingParams(max_new_tokens=3, temperature=0.0),
        SamplingParams(max_new_tokens=17, temperature=1.0, seed=2),
        SamplingParams(max_new_tokens=9, temperature=0.8, top_p=0.7, seed=5),
    ]
    engine = LocalEngine(tiny_model, tiny_tokenizer, device="cpu", batch_wait_s=0.5)
    batch_sizes: list[int] = []
    decode = engine._decode
    engine._decode = lambda rows: batch_sizes.append(len(rows)) or decode(rows)  # type: ignore[method-assign]
    results = await asyncio.gather(*(engine.agenerate(p, s) for p, s in zip(prompts, params, strict=True)))
    engine.close()
    assert batch_sizes == [3]
    assert [len(r.token_ids) for r in results] == [3, 17, 9]
    for prompt, sp, gen in zip(prompts, params, results, strict=True):
        assert gen.token_ids == engine.generate(prompt, sp).token_ids
        recomputed = engine.teacher_forced_logprobs(prompt + gen.token_ids, len(prompt))
        assert recomputed == pytest.approx(gen.logprobs, abs=1e-4)
