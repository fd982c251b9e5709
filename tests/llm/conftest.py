"""A tiny tokenizer (the embedded recipe's, trained on a few snippets) and a tiny random-init model."""

from __future__ import annotations

import pytest

from coding_framework.config.embedded import ArchitectureConfig
from coding_framework.embedded.architecture import init_model
from coding_framework.embedded.tokenizer import tokenizer_from_texts
from coding_framework.llm.local import LocalEngine

SNIPPETS = [
    "def add(a, b):\n    return a + b\n",
    "def greater_than_3(xs: list[int]) -> list[int]:\n    return [x for x in xs if x > 3]\n",
    "Write a function that returns the sum of a list.\n```python\nprint('hello world')\n```\n",
    "class Stack:\n    def __init__(self):\n        self.items = []\n"
    "    def push(self, x):\n        self.items.append(x)\n",
]


@pytest.fixture(scope="session")
def tiny_tokenizer():
    return tokenizer_from_texts(SNIPPETS * 20, vocab_size=400)


@pytest.fixture(scope="session")
def tiny_model(tiny_tokenizer):
    arch = ArchitectureConfig(
        hidden_size=64, num_heads=2, num_kv_heads=1, num_layers=2, intermediate_size=128, max_positions=512
    )
    return init_model(arch, tiny_tokenizer, seed=0)


@pytest.fixture
def engine(tiny_model, tiny_tokenizer):
    eng = LocalEngine(tiny_model, tiny_tokenizer, device="cpu", policy_version="v0")
    yield eng
    eng.close()


@pytest.fixture
def encode(tiny_tokenizer):
    return lambda text: tiny_tokenizer(text, add_special_tokens=False)["input_ids"]
