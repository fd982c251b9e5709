"""A TokenEngine fake that generates the exact tokenization of scripted texts, each with a given finish
reason."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from coding_framework.llm.base import FinishReason, Generation, SamplingParams


class ExactScriptEngine:
    """Answers each call with the next scripted text, tokenized canonically, plus EOS when ``eos``."""

    policy_version = "scripted"

    def __init__(self, tokenizer: Any, answers: Sequence[tuple[str, FinishReason]]) -> None:
        self.tokenizer = tokenizer
        self._answers = list(answers)
        self.prompts: list[list[int]] = []

    def generate(self, prompt_ids: Sequence[int], params: SamplingParams) -> Generation:
        self.prompts.append(list(prompt_ids))
        text, reason = self._answers.pop(0)
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        if reason == "eos":
            ids = [*ids, self.tokenizer.eos_token_id]
        logprobs = [-0.5 - i for i in range(len(ids))]
        return Generation(
            token_ids=ids,
            logprobs=logprobs,
            text=text,
            stop_reason=reason,
            policy_version=self.policy_version,
        )

    def generate_batch(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[Generation]:
        return [self.generate(p, params) for p in prompts]

    async def agenerate(self, prompt_ids: Sequence[int], params: SamplingParams) -> Generation:
        return self.generate(prompt_ids, params)
