"""Rebuild an episode's TokenSession from its call records, so graph state stays plain JSON.

A training episode keeps one TokenSession for the Generator. Between graph steps (and across a resume
from a checkpoint) only the per-call records live in the state; the next step replays them through the
session's own ``generate`` with an engine that returns the recorded generation, after checking that the
rebuilt prompt ids are exactly the recorded ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from coding_framework.llm.base import EngineError, Generation, SamplingParams


class RecordedTurn:
    """A TokenEngine that answers one prompt with a recorded generation, refusing any other prompt."""

    def __init__(self, record: dict[str, Any], tokenizer: Any) -> None:
        self.record = record
        self.tokenizer = tokenizer
        self.policy_version = record["policy_version"]

    def generate(self, prompt_ids: Sequence[int], params: SamplingParams) -> Generation:
        expected = self.record["prompt_ids"]
        if list(prompt_ids) != expected:
            at = next(
                (i for i, (a, b) in enumerate(zip(prompt_ids, expected, strict=False)) if a != b),
                min(len(prompt_ids), len(expected)),
            )
            raise EngineError(
                f"session replay diverged from the record of turn {self.record['turn']} at token {at} "
                f"({len(prompt_ids)} ids rebuilt, {len(expected)} recorded): the conversation or the "
                "tokenizer changed since the episode was recorded"
            )
        return Generation(
            token_ids=list(self.record["response_ids"]),
            logprobs=list(self.record["logprobs"]),
            text=self.record["text"],
            stop_reason=self.record["stop_reason"],
            policy_version=self.record["policy_version"],
        )

    def generate_batch(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[Generation]:
        return [self.generate(p, params) for p in prompts]

    async def agenerate(self, prompt_ids: Sequence[int], params: SamplingParams) -> Generation:
        return self.generate(prompt_ids, params)
