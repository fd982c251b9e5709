"""Token-in/token-out multi-turn sequences: what the policy saw and generated, exactly, for RL.

Re-rendering a conversation and tokenizing it again can yield different ids than the ones the model
generated (BPE can spell one text several ways), which breaks the logprobs training relies on. A
``TokenSession`` therefore only ever appends: the first ``add_messages`` renders the chat template once,
later ones tokenize just the new messages' rendering, and generated ids are appended verbatim.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from coding_framework.llm.base import FinishReason, Generation, SamplingParams, TokenEngine

Message = dict[str, str]

_MARK = "\x00probe answer\x00"


class TemplateError(ValueError):
    """The tokenizer's chat template cannot be extended by appending (it is not prefix-stable)."""


@dataclass(frozen=True)
class CallRecord:
    """One generation in a session. ``start`` is where ``response_ids`` begin in the session's ``ids``."""

    role: str
    turn: int
    start: int
    prompt_ids: list[int]
    response_ids: list[int]
    logprobs: list[float]
    text: str
    stop_reason: FinishReason
    policy_version: str


@dataclass(frozen=True)
class _Template:
    """What the chat template adds around messages, found by rendering probe conversations."""

    generation_prompt: str
    assistant_suffix: str


def _render(tokenizer: Any, messages: Sequence[Message], add_generation_prompt: bool = False) -> str:
    return tokenizer.apply_chat_template(
        list(messages), tokenize=False, add_generation_prompt=add_generation_prompt
    )


def _base_for(messages: Sequence[Message]) -> list[Message]:
    """A probe history the new messages can follow (user turns follow an assistant turn)."""
    base = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
    if messages and messages[0]["role"] != "assistant":
        base.append({"role": "assistant", "content": "A"})
    return base


def _suffix(tokenizer: Any, base: list[Message], new: Sequence[Message]) -> str:
    before = _render(tokenizer, base)
    after = _render(tokenizer, [*base, *new])
    if not after.startswith(before):
        raise TemplateError(
            "the chat template is not prefix-stable: rendering more messages changes the rendering "
            f"of earlier ones ({before[-60:]!r} is not a prefix of the longer rendering); use a "
            "template that renders each message independently"
        )
    return after[len(before) :]


def inspect_template(tokenizer: Any) -> _Template:
    """Check the template is prefix-stable and find its generation prompt and assistant-turn suffix."""
    if getattr(tokenizer, "chat_template", None) is None:
        raise TemplateError("the tokenizer has no chat template")
    convo: list[Message] = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": "first answer"},
        {"role": "user", "content": "second question"},
        {"role": "assistant", "content": "second answer"},
    ]
    for k in range(1, len(convo)):
        piece = _suffix(tokenizer, convo[:k], convo[k : k + 1])
        if convo[k]["role"] == "user" and piece != _suffix(tokenizer, _base_for(convo[k:]), convo[k : k + 1]):
            raise TemplateError(
                "the chat template renders a user message differently depending on the history"
            )
    base = convo[:2]
    prompt_text = _render(tokenizer, base, add_generation_prompt=True)
    plain = _render(tokenizer, base)
    if not prompt_text.startswith(plain):
        raise TemplateError("the generation prompt does not extend the rendered conversation")
    answered = _render(tokenizer, [*base, {"role": "assistant", "content": _MARK}])
    if not answered.startswith(prompt_text + _MARK):
        raise TemplateError(
            "an assistant turn does not render as the generation prompt followed by its content; the "
            "template rewrites assistant messages (e.g. strips reasoning), so generated ids cannot be "
            "appended verbatim"
        )
    return _Template(
        generation_prompt=prompt_text[len(plain) :], assistant_suffix=answered[len(prompt_text + _MARK) :]
    )


def _with_role(params: SamplingParams, role: str) -> SamplingParams:
    return params if params.role is not None else dataclasses.replace(params, role=role)


class TokenSession:
    """An append-only token sequence for one conversation of one policy.

    ``ids``, ``loss_mask`` and ``logprobs`` align one-to-one: generated tokens have mask 1 and their
    engine logprob, everything else (rendered messages, generation prompts, turn suffixes) mask 0 and 0.0.
    """

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self._template = inspect_template(tokenizer)
        self._ids: list[int] = []
        self._mask: list[int] = []
        self._logprobs: list[float] = []
        self.messages: list[Message] = []
        self.calls: list[CallRecord] = []
        self._awaiting_response = False
        self._given = ""

    @property
    def ids(self) -> list[int]:
        return list(self._ids)

    @property
    def loss_mask(self) -> list[int]:
        return list(self._mask)

    @property
    def logprobs(self) -> list[float]:
        return list(self._logprobs)

    def __len__(self) -> int:
        return len(self._ids)

    def add_messages(self, messages: Sequence[Message]) -> None:
        """Append messages (mask 0). The first call renders them whole; later calls only their delta."""
        if not messages:
            return
        if self._awaiting_response:
            raise RuntimeError("a generation prompt was added; call generate() before adding messages")
        if not self._ids:
            text = _render(self.tokenizer, messages)
        else:
            text = _suffix(self.tokenizer, _base_for(messages), messages)
        self._append(self._encode(text), mask=0)
        self.messages.extend(dict(m) for m in messages)

    def add_generation_prompt(self) -> None:
        """Append the template's assistant header (mask 0); ``generate`` does this itself when needed."""
        if not self._awaiting_response:
            self._append(self._encode(self._template.generation_prompt), mask=0)
            self._awaiting_response = True

    def add_answer_prefix(self, text: str) -> None:
        """Start the next assistant turn with ``text`` (mask 0: given, never trained): the model continues
        it, and the turn's message holds ``text`` followed by what was generated."""
        self.add_generation_prompt()
        self._append(self._encode(text), mask=0)
        self._given += text

    def generate(
        self, engine: TokenEngine, params: SamplingParams, role: str = "assistant", turn: int | None = None
    ) -> Generation:
        """Generate the next assistant turn from the exact ids so far and append it (mask 1). The call
        carries ``role`` to the engine (``SamplingParams.role``) unless ``params`` names one already."""
        self.add_generation_prompt()
        generation = engine.generate(self.ids, _with_role(params, role))
        self._record(generation, role, turn)
        return generation

    async def agenerate(
        self, engine: TokenEngine, params: SamplingParams, role: str = "assistant", turn: int | None = None
    ) -> Generation:
        self.add_generation_prompt()
        generation = await engine.agenerate(self.ids, _with_role(params, role))
        self._record(generation, role, turn)
        return generation

    def _record(self, gen: Generation, role: str, turn: int | None) -> None:
        prompt_ids, start = self.ids, len(self._ids)
        self._ids.extend(gen.token_ids)
        self._mask.extend([1] * len(gen.token_ids))
        self._logprobs.extend(gen.logprobs)
        self._awaiting_response = False
        self._append(self._encode(self._closing(gen)), mask=0)
        self.messages.append({"role": "assistant", "content": self._given + gen.text})
        self._given = ""
        self.calls.append(
            CallRecord(
                role=role,
                turn=len(self.calls) if turn is None else turn,
                start=start,
                prompt_ids=prompt_ids,
                response_ids=list(gen.token_ids),
                logprobs=list(gen.logprobs),
                text=gen.text,
                stop_reason=gen.stop_reason,
                policy_version=gen.policy_version,
            )
        )

    def _closing(self, gen: Generation) -> str:
        """The rest of the assistant turn's rendering after what the model generated."""
        suffix = self._template.assistant_suffix
        if gen.stop_reason == "eos" and gen.token_ids:
            eos_text = self.tokenizer.convert_ids_to_tokens(gen.token_ids[-1])
            if suffix.startswith(eos_text):
                return suffix[len(eos_text) :]
        return suffix

    def _encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"]) if text else []

    def _append(self, ids: list[int], mask: int) -> None:
        self._ids.extend(ids)
        self._mask.extend([mask] * len(ids))
        self._logprobs.extend([0.0] * len(ids))
