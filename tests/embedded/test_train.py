"""SFT loop: the masked loss, the schedule, learning, and determinism."""

from __future__ import annotations

import random

import pytest
import torch

from coding_framework.config.embedded import ArchitectureConfig, PretrainConfig, SFTConfig
from coding_framework.embedded.architecture import init_model
from coding_framework.embedded.data import SFTExample
from coding_framework.embedded.tokenizer import tokenizer_from_texts
from coding_framework.embedded.train import answer_loss, collate, lr_at, packed_rows, pretrain, sft_train

ARCH = ArchitectureConfig(
    hidden_size=64, num_heads=2, num_kv_heads=2, num_layers=2, intermediate_size=128, max_positions=256
)


@pytest.fixture(scope="module")
def tok():
    return tokenizer_from_texts(
        ["question: add one\nanswer: x + 1\n", "question: double\nanswer: x * 2\n"] * 20, vocab_size=300
    )


@pytest.fixture(scope="module")
def examples(tok):
    def ex(prompt: str, answer: str) -> SFTExample:
        p = tok(prompt, add_special_tokens=False)["input_ids"]
        a = tok(answer, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        return SFTExample(
            input_ids=p + a, loss_mask=[0] * len(p) + [1] * len(a), kind="generation", task_id=prompt
        )

    return [ex("question: add one\nanswer:", " x + 1"), ex("question: double\nanswer:", " x * 2")]


def test_answer_loss_ignores_prompt_and_padding(tok, examples) -> None:
    model = init_model(ARCH, tok, seed=0)
    ids, attn, mask = collate(examples, tok.pad_token_id)
    logits = model(input_ids=ids, attention_mask=attn).logits.float()
    lp = torch.log_softmax(logits[:, :-1], -1).gather(-1, ids[:, 1:, None])[..., 0]  # (B, T-1)
    expected = -lp[mask[:, 1:]].mean()
    assert answer_loss(model, ids, attn, mask).item() == pytest.approx(expected.item(), rel=1e-5)


def test_lr_schedule() -> None:
    s = SFTConfig(steps=100, warmup_steps=10, lr=1.0)
    assert lr_at(0, s) == pytest.approx(0.1)
    assert lr_at(9, s) == pytest.approx(1.0)
    assert lr_at(10, s) == pytest.approx(1.0)
    assert lr_at(99, s) == pytest.approx(0.1, abs=0.01)
    assert all(lr_at(i, s) >= lr_at(i + 1, s) for i in range(10, 99))


def test_training_learns_and_is_deterministic(tok, examples) -> None:
    settings = SFTConfig(steps=40, batch_size=2, lr=3e-3, warmup_steps=2)
    first = init_model(ARCH, tok, seed=1)
    stats = sft_train(first, examples, settings, tok.pad_token_id, seed=0)
    assert stats.final_loss < 0.3 * stats.first_loss
    second = init_model(ARCH, tok, seed=1)
    sft_train(second, examples, settings, tok.pad_token_id, seed=0)
    for a, b in zip(first.state_dict().values(), second.state_dict().values(), strict=True):
        assert torch.equal(a, b)


def test_examples_longer_than_max_seq_len_are_dropped(tok, examples) -> None:
    settings = SFTConfig(steps=1, max_seq_len=64, batch_size=1)
    long = SFTExample(input_ids=[5] * 100, loss_mask=[1] * 100, kind="generation", task_id="long")
    stats = sft_train(init_model(ARCH, tok, seed=0), [*examples, long], settings, tok.pad_token_id, seed=0)
    assert stats.rows == 2
    with pytest.raises(ValueError, match="max_seq_len"):
        sft_train(init_model(ARCH, tok, seed=0), [long], settings, tok.pad_token_id, seed=0)


def test_packed_rows_are_whole_documents_joined_by_separators() -> None:
    docs = [[1, 2, 3], [4, 5], [6]]
    rows = packed_rows(docs, seq_len=5, batch_size=2, sep_id=0, rng=random.Random(0))
    flat = next(rows).flatten().tolist() + next(rows).flatten().tolist()  # (2 * 2 * 5,)
    segments, current = [], []
    for tok in flat:
        if tok == 0:
            segments.append(current)
            current = []
        else:
            current.append(tok)
    assert len(segments) >= 6
    assert all(seg in docs for seg in segments)  # every separator closes a whole document
    assert sorted(map(tuple, segments[:3])) == [(1, 2, 3), (4, 5), (6,)]  # one shuffled pass, then the next


def test_pretraining_learns(tok) -> None:
    docs = [tok("def add(a, b):\n    return a + b\n", add_special_tokens=False)["input_ids"]]
    model = init_model(ARCH, tok, seed=0)
    stats = pretrain(
        model,
        docs,
        PretrainConfig(steps=80, batch_size=2, seq_len=32, warmup_steps=2),
        tok.pad_token_id,
        seed=0,
    )
    assert stats is not None and stats.final_loss < 0.5 * stats.first_loss
    assert pretrain(model, docs, PretrainConfig(steps=0), tok.pad_token_id, seed=0) is None
