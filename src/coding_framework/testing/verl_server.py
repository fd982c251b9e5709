"""A stand-in for verl's ``LLMServerClient``: scripted answers as ``TokenOutput`` over a real tokenizer."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from verl.workers.rollout.replica import TokenOutput

from coding_framework.embedded.tokenizer import IM_END


class ScriptedServerManager:
    """Answers each ``generate`` with the next scripted text (or ``respond(prompt_text)``), ending in EOS
    unless ``max_tokens`` cuts it. Logprobs are a deterministic function of the position; every request
    is recorded so tests can check what verl's server would have been asked."""

    def __init__(
        self,
        tokenizer: Any,
        answers: Sequence[str] = (),
        respond: Callable[[str], str] | None = None,
        global_steps: int | None = 3,
    ) -> None:
        self.tokenizer = tokenizer
        self.answers = list(answers)
        self.respond = respond
        self.global_steps = global_steps
        self.requests: list[dict[str, Any]] = []

    async def generate(
        self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any], **kwargs: Any
    ) -> TokenOutput:
        self.requests.append(
            {
                "request_id": request_id,
                "prompt_ids": list(prompt_ids),
                "sampling_params": dict(sampling_params),
            }
        )
        if self.respond is not None:
            text = self.respond(self.tokenizer.decode(prompt_ids))
        else:
            text = self.answers[len(self.requests) - 1]
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        ids.append(self.tokenizer.convert_tokens_to_ids(IM_END))
        ids = ids[: sampling_params["max_tokens"]]
        logprobs = [-0.25 * ((len(prompt_ids) + i) % 5 + 1) for i in range(len(ids))]
        return TokenOutput(
            token_ids=ids,
            log_probs=logprobs if sampling_params.get("logprobs") else None,
            stop_reason="completed",
            extra_fields={"global_steps": self.global_steps},
        )
