"""A scripted TokenEngine over a small real BPE tokenizer with the embedded model's ChatML template."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from coding_framework.embedded.tokenizer import IM_END, tokenizer_from_texts
from coding_framework.llm.base import Generation, SamplingParams

_CORPUS = [
    "def add(a, b):\n    return a + b\n",
    "You are a Python programmer. Answer with one complete Python function.",
    "Your function is wrong: tests passed. Fix it. Here is the function:\n```python\n```\n",
    "for i in range(10):\n    if i % 2 == 0:\n        print(i)\n",
]


@functools.cache
def tiny_tokenizer() -> Any:
    return tokenizer_from_texts(_CORPUS * 20, vocab_size=400, min_frequency=2)


class ScriptedEngine:
    """Answers with scripted texts (or ``respond(prompt_text)``), ending each with the EOS token.

    Logprobs are a deterministic function of the position, so tests can check they land where they should.
    """

    def __init__(
        self,
        answers: Sequence[str] = (),
        respond: Callable[[str], str] | None = None,
        policy_version: str = "test-0",
    ) -> None:
        self.tokenizer = tiny_tokenizer()
        self.policy_version = policy_version
        self.answers = list(answers)
        self.respond = respond
        self.prompts: list[list[int]] = []

    def generate(self, prompt_ids: Sequence[int], params: SamplingParams) -> Generation:
        prompt = list(prompt_ids)
        self.prompts.append(prompt)
        if self.respond is not None:
            text = self.respond(self.tokenizer.decode(prompt))
        else:
            text = self.answers[len(self.prompts) - 1]
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"][: params.max_new_tokens - 1]
        ids.append(self.tokenizer.convert_tokens_to_ids(IM_END))
        logprobs = [-0.01 * ((len(prompt) + i) % 7 + 1) for i in range(len(ids))]
        return Generation(
            token_ids=ids,
            logprobs=logprobs,
            text=self.tokenizer.decode(ids, skip_special_tokens=True),
            stop_reason="eos",
            policy_version=self.policy_version,
        )

    def generate_batch(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[Generation]:
        return [self.generate(p, params) for p in prompts]

    async def agenerate(self, prompt_ids: Sequence[int], params: SamplingParams) -> Generation:
        return self.generate(prompt_ids, params)
