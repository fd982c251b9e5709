"""TokenSession: append-only ids, masks and logprobs; template checks; per-call records."""

from __future__ import annotations

import pytest

from coding_framework.llm.base import SamplingParams
from coding_framework.llm.session import TemplateError, TokenSession, inspect_template
from tests.llm.exact_script_engine import ExactScriptEngine

FIRST = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Write add(a, b)."}]
REVISION = [{"role": "user", "content": "It failed: assert add(1, 2) == 3. Fix it."}]
PARAMS = SamplingParams(max_new_tokens=16, temperature=1.0, seed=0)


def _mask_runs(session: TokenSession) -> list[list[int]]:
    runs, current = [], []
    for tok, m in zip(session.ids, session.loss_mask, strict=True):
        if m:
            current.append(tok)
        elif current:
            runs.append(current)
            current = []
    return runs + ([current] if current else [])


def test_embedded_template_facts(tiny_tokenizer) -> None:
    facts = inspect_template(tiny_tokenizer)
    assert facts.generation_prompt == "<|im_start|>assistant\n"
    assert facts.assistant_suffix == "<|im_end|>\n"


def test_session_equals_full_rendering_when_answers_are_canonical(tiny_tokenizer) -> None:
    answers = [("def add(a, b):\n    return a - b", "eos"), ("def add(a, b):\n    return a + b", "length")]
    engine = ExactScriptEngine(tiny_tokenizer, answers)
    session = TokenSession(tiny_tokenizer)
    session.add_messages(FIRST)
    session.generate(engine, PARAMS, role="generator")
    session.add_messages(REVISION)
    session.generate(engine, PARAMS, role="generator")
    conversation = [
        *FIRST,
        {"role": "assistant", "content": answers[0][0]},
        *REVISION,
        {"role": "assistant", "content": answers[1][0]},
    ]
    full = tiny_tokenizer.apply_chat_template(conversation, tokenize=False)
    assert session.ids == tiny_tokenizer(full, add_special_tokens=False)["input_ids"]
    assert session.messages == conversation
    # The first answer ended with EOS (mask 1); the second was cut, so the session closed its turn (mask 0).
    eos = tiny_tokenizer.eos_token_id
    first, second = session.calls
    assert session.ids[first.start + len(first.response_ids) - 1] == eos
    assert session.loss_mask[first.start + len(first.response_ids) - 1] == 1
    assert session.ids[second.start + len(second.response_ids)] == eos
    assert session.loss_mask[second.start + len(second.response_ids)] == 0


def test_generated_tokens_are_mask_one_with_their_logprobs(engine, tiny_tokenizer) -> None:
    session = TokenSession(tiny_tokenizer)
    session.add_messages(FIRST)
    gens = [session.generate(engine, PARAMS, role="generator")]
    snapshot = session.ids
    session.add_messages(REVISION)
    gens.append(session.generate(engine, SamplingParams(max_new_tokens=9, temperature=0.7, seed=1)))
    assert session.ids[: len(snapshot)] == snapshot  # earlier positions never change
    assert len(session.ids) == len(session.loss_mask) == len(session.logprobs)
    runs = _mask_runs(session)
    assert runs == [g.token_ids for g in gens]
    assert [tiny_tokenizer.decode(r, skip_special_tokens=True) for r in runs] == [g.text for g in gens]
    assert sum(session.loss_mask) == sum(len(g.token_ids) for g in gens)
    masked_lps = [lp for lp, m in zip(session.logprobs, session.loss_mask, strict=True) if m]
    assert masked_lps == [lp for g in gens for lp in g.logprobs]
    assert all(lp == 0.0 for lp, m in zip(session.logprobs, session.loss_mask, strict=True) if not m)


def test_call_records(engine, tiny_tokenizer) -> None:
    session = TokenSession(tiny_tokenizer)
    session.add_messages(FIRST)
    gen = session.generate(engine, PARAMS, role="generator")
    session.add_messages(REVISION)
    session.generate(engine, PARAMS, role="generator", turn=7)
    first, second = session.calls
    assert (first.role, first.turn, second.turn) == ("generator", 0, 7)
    assert first.prompt_ids == session.ids[: first.start]
    assert first.response_ids == gen.token_ids == session.ids[first.start : first.start + len(gen.token_ids)]
    assert first.logprobs == gen.logprobs and first.stop_reason == gen.stop_reason
    assert first.policy_version == "v0"
    assert second.prompt_ids[: len(first.prompt_ids)] == first.prompt_ids
    prompt_text = tiny_tokenizer.decode(first.prompt_ids)
    assert prompt_text.endswith("<|im_start|>assistant\n")


async def test_agenerate(engine, tiny_tokenizer) -> None:
    session = TokenSession(tiny_tokenizer)
    session.add_messages(FIRST)
    gen = await session.agenerate(engine, PARAMS, role="reviewer")
    assert session.calls[0].role == "reviewer"
    assert _mask_runs(session) == [gen.token_ids]


def test_messages_cannot_interrupt_a_pending_generation(tiny_tokenizer) -> None:
    session = TokenSession(tiny_tokenizer)
    session.add_messages(FIRST)
    session.add_generation_prompt()
    session.add_generation_prompt()  # idempotent
    assert tiny_tokenizer.decode(session.ids).count("<|im_start|>assistant") == 1
    with pytest.raises(RuntimeError, match="generate"):
        session.add_messages(REVISION)


def _with_template(tokenizer, template: str):
    clone = tokenizer.__class__(
        tokenizer_object=tokenizer.backend_tokenizer,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        chat_template=template,
    )
    return clone


@pytest.mark.parametrize(
    "template,match",
    [
        # Only the last two messages are shown: earlier renderings change.
        (
            "{% for m in messages[-2:] %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
            "{% endfor %}"
            "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
            "prefix-stable",
        ),
        # Assistant content is rewritten when rendered (like templates that strip reasoning).
        (
            "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
            "{% if m['role'] == 'assistant' %}{{ m['content'] | upper }}"
            "{% else %}{{ m['content'] }}{% endif %}"
            "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
            "rewrites",
        ),
    ],
)
def test_unstable_templates_are_rejected(tiny_tokenizer, template: str, match: str) -> None:
    with pytest.raises(TemplateError, match=match):
        TokenSession(_with_template(tiny_tokenizer, template))


def test_missing_template_is_rejected(tiny_tokenizer) -> None:
    with pytest.raises(TemplateError, match="no chat template"):
        TokenSession(_with_template(tiny_tokenizer, None))
