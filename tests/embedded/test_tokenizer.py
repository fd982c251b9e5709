"""The embedded tokenizer: byte-level round trips, single digits, special tokens, a prefix-stable template."""

from __future__ import annotations

import pytest

from coding_framework.embedded.tokenizer import IM_END, IM_START, PAD, stdlib_sources, tokenizer_from_texts
from coding_framework.llm.session import inspect_template

CORPUS = ["def scale_by_12(xs):\n    return [x * 12 for x in xs]\n", "print('héllo wörld ✓')\n"] * 30


@pytest.fixture(scope="module")
def tok():
    return tokenizer_from_texts(CORPUS, vocab_size=600)


@pytest.mark.parametrize(
    "text", ["def f(x):\n\treturn x  # ok\n", "naïve ✓ 日本 \x00\x7f", "    \n\n   x = 'a'\r\n"]
)
def test_round_trip(tok, text: str) -> None:
    assert tok.decode(tok(text, add_special_tokens=False)["input_ids"]) == text


def test_digits_are_single_tokens(tok) -> None:
    pieces = tok.convert_ids_to_tokens(tok("x * 1234", add_special_tokens=False)["input_ids"])
    assert pieces[-4:] == ["1", "2", "3", "4"]


def test_special_tokens(tok) -> None:
    ids = tok(f"{IM_START}user\nhi{IM_END}", add_special_tokens=False)["input_ids"]
    assert ids[0] == tok.convert_tokens_to_ids(IM_START) and ids[-1] == tok.eos_token_id
    assert tok.eos_token == IM_END and tok.pad_token == PAD
    assert tok("hi")["input_ids"] == tok("hi", add_special_tokens=False)["input_ids"]  # no BOS added


def test_template_is_prefix_stable(tok) -> None:
    facts = inspect_template(tok)
    assert (facts.generation_prompt, facts.assistant_suffix) == ("<|im_start|>assistant\n", "<|im_end|>\n")


def test_training_is_deterministic() -> None:
    a = tokenizer_from_texts(CORPUS, vocab_size=600).backend_tokenizer.to_str()
    b = tokenizer_from_texts(CORPUS, vocab_size=600).backend_tokenizer.to_str()
    assert a == b


def test_stdlib_sources_respect_the_byte_budget() -> None:
    files = stdlib_sources(300_000)
    assert files and sum(f.stat().st_size for f in files) <= 300_000
    assert all("site-packages" not in f.parts and "test" not in f.parts for f in files)
    assert files == sorted(files)
