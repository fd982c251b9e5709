"""The auditor on real rollouts of a tiny random Qwen2 (LocalEngine, fp32 CPU)."""

from __future__ import annotations

import asyncio
import functools

import pytest

from coding_framework.embedded.architecture import init_model
from coding_framework.llm.base import SamplingParams
from coding_framework.llm.local import LocalEngine
from coding_framework.llm.session import TokenSession
from coding_framework.problems.prompts import generation_messages, revision_messages
from coding_framework.testing.engine import tiny_tokenizer
from coding_framework.testing.models import TINY
from coding_framework.training.auditor import audit
from coding_framework.training.trajectory import CallSpan, Trajectory
from tests.training._episodes import ADD


@functools.cache
def _engine() -> LocalEngine:
    return LocalEngine(init_model(TINY, tiny_tokenizer(), seed=0), tiny_tokenizer(), device="cpu",
                       policy_version="v0")


def _session(seed: int) -> TokenSession:
    engine = _engine()
    session = TokenSession(engine.tokenizer)
    session.add_messages(generation_messages(ADD))
    session.generate(engine, SamplingParams(max_new_tokens=24, seed=seed), role="generator")
    session.add_messages(revision_messages(ADD, "", "assert add(1, 2) == 3 failed"))
    session.generate(engine, SamplingParams(max_new_tokens=24, seed=seed + 1), role="generator")
    return session


def _trajectories() -> list[Trajectory]:
    return [Trajectory.from_session(_session(seed), task_id=f"t/{seed}") for seed in (1, 3, 5)]


def test_clean_rollouts_pass() -> None:
    report = audit(_trajectories(), _engine().model, _engine().tokenizer, tolerance=1e-4)
    assert report.passed, report.summary()
    assert report.checked_tokens >= 3 * 2 * 2 and report.offending_tokens == 0
    assert report.max_abs_diff < 1e-4
    assert report.summary().startswith("audit passed")


def test_a_tampered_logprob_is_found_with_its_turn() -> None:
    trajs = _trajectories()
    bad = trajs[1].model_dump()
    at = trajs[1].calls[1].start + 1
    bad["response_logprobs"][at] -= 0.01
    trajs[1] = Trajectory.model_validate(bad)
    report = audit(trajs, _engine().model, _engine().tokenizer)
    assert not report.passed
    (issue,) = report.issues
    assert (issue.trajectory, issue.turn, issue.kind, issue.offending_tokens) == (1, 1, "logprob", 1)
    assert issue.max_abs_diff == pytest.approx(0.01, abs=1e-4)
    assert report.offending_tokens == 1 and "trajectory 1 (t/3) turn 1" in report.summary()


def _retokenized(session: TokenSession) -> Trajectory:
    """What a pipeline that re-renders the whole chat and tokenizes it again would record.

    The assistant turns are found by character offsets and handed the engine's logprobs in order.
    """
    tok = session.tokenizer
    first = len(generation_messages(ADD))
    prompt_text = tok.apply_chat_template(session.messages[:first], tokenize=False,
                                          add_generation_prompt=True)
    full_text = tok.apply_chat_template(session.messages, tokenize=False)
    enc = tok(full_text, add_special_tokens=False, return_offsets_mapping=True)
    ids, offsets = enc["input_ids"], enc["offset_mapping"]
    p = next(i for i, (s, _) in enumerate(offsets) if s >= len(prompt_text))
    mask, logprobs, calls, cursor = [0] * (len(ids) - p), [0.0] * (len(ids) - p), [], len(prompt_text)
    for turn, record in enumerate(session.calls):
        begin = full_text.index(record.text, cursor)
        cursor = begin + len(record.text)
        inside = [i - p for i, (s, e) in enumerate(offsets) if i >= p and s >= begin and e <= cursor]
        for k, j in enumerate(inside):
            mask[j] = 1
            logprobs[j] = record.logprobs[min(k, len(record.logprobs) - 1)]
        calls.append(CallSpan(turn=turn, start=inside[0], length=len(inside), text=record.text,
                              stop_reason=record.stop_reason, policy_version=record.policy_version))
    end = calls[-1].end
    return Trajectory(prompt_ids=ids[:p], response_ids=ids[p : p + end], response_mask=mask[:end],
                      response_logprobs=logprobs[:end], calls=calls, task_id="retokenized")


def test_a_retokenized_history_is_detected() -> None:
    session = _session(1)
    naive = _retokenized(session)
    exact = Trajectory.from_session(session)
    assert naive.ids != exact.ids  # precondition: BPE spells the sampled text differently
    report = audit([exact, naive], _engine().model, _engine().tokenizer)
    assert not report.passed
    assert {i.trajectory for i in report.issues} == {1}
    assert any(i.kind == "logprob" for i in report.issues)


def test_stale_logprobs_from_other_weights_are_detected() -> None:
    other = init_model(TINY, tiny_tokenizer(), seed=1)
    report = audit(_trajectories()[:1], other, tiny_tokenizer())
    assert not report.passed and report.offending_tokens > 0
    assert {i.turn for i in report.issues} == {0, 1}


def test_text_that_does_not_decode_from_the_ids_is_detected() -> None:
    traj = _trajectories()[0]
    data = traj.model_dump()
    data["calls"][0]["text"] = data["calls"][0]["text"] + " (edited)"
    report = audit([Trajectory.model_validate(data)], _engine().model, _engine().tokenizer)
    assert [(i.kind, i.turn) for i in report.issues] == [("text", 0)]
    with pytest.raises(ValueError, match="tolerance"):
        audit([traj], _engine().model, _engine().tokenizer, tolerance=0)


async def test_rollouts_decoded_together_with_left_padding_pass() -> None:
    """Concurrent ``agenerate`` calls are micro-batched (unequal prompts, left padding): still within 1e-4."""
    engine = _engine()
    sessions = []
    for i in range(4):
        session = TokenSession(engine.tokenizer)
        user = {"role": "user", "content": "add " * (1 + 3 * i)}
        session.add_messages([{"role": "system", "content": "S"}, user])
        sessions.append(session)
    for turn in range(2):
        await asyncio.gather(*(s.agenerate(engine, SamplingParams(max_new_tokens=16, seed=10 * turn + i),
                                           role="generator") for i, s in enumerate(sessions)))
        for s in sessions:
            s.add_messages([{"role": "user", "content": "again"}])
    report = audit([Trajectory.from_session(s) for s in sessions], engine.model, engine.tokenizer)
    assert report.passed, report.summary()
    assert report.checked_tokens > 8
