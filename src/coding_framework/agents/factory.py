"""Build the three agents from `AgentsConfig`, sharing one engine per backend spec."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel

from coding_framework.agents.executor import AsyncGrader, CodeExecutor
from coding_framework.agents.generator import CodeGenerator
from coding_framework.agents.reviewer import REVIEWER_ROLE, CodeReviewer, LLMReviewer, StaticReviewer
from coding_framework.config.agents import AgentMode, AgentsConfig
from coding_framework.config.llm import LLMConfig, SamplingConfig
from coding_framework.config.model_ref import ModelRef
from coding_framework.llm.base import TokenEngine
from coding_framework.llm.factory import build_chat_model, build_engine
from coding_framework.models import ResolvedModel


@dataclass
class Agents:
    """The roles one workflow runs; ``reviewer`` is None when the config turns reviewing off."""

    generator: CodeGenerator
    executor: CodeExecutor
    reviewer: CodeReviewer | None
    engines: EngineCache | None = None
    """The engines built for these agents' specs; ``engines.close()`` releases them."""


class EngineCache:
    """One engine per model spec, so a Generator and an LLM Reviewer on the same model share its weights.
    ``resolved``: models the caller already resolved, built as they are for the specs they came from (so
    their weights are not hashed again). ``close`` closes the engines it built (a vLLM server one started
    stops with it)."""

    def __init__(
        self,
        vllm: dict[str, Any] | None = None,
        resolved: Sequence[ResolvedModel] = (),
        timeout_s: float = 120.0,
    ) -> None:
        self._engines: dict[str, TokenEngine] = {}
        self._built: list[TokenEngine] = []
        self._vllm = dict(vllm or {})
        self._timeout_s = timeout_s
        self._resolved = {str(model.ref): model for model in resolved}

    def add(self, spec: ModelRef, engine: TokenEngine) -> None:
        self._engines[str(spec)] = engine

    def get(self, spec: ModelRef) -> TokenEngine:
        key = str(spec)
        if key not in self._engines:
            config = LLMConfig.from_spec(spec, vllm=self._vllm, timeout_s=self._timeout_s)
            self._engines[key] = build_engine(config, self._resolved.get(key))
            self._built.append(self._engines[key])
        return self._engines[key]

    def chat_model(self, spec: ModelRef, sampling: SamplingConfig, role: str | None = None) -> BaseChatModel:
        config = LLMConfig.from_spec(spec, sampling=sampling)
        return build_chat_model(config, engine=self.get(spec), role=role)

    def close(self) -> None:
        built, self._built = self._built, []
        for engine in built:
            close = getattr(engine, "close", None)
            if close is not None:
                close()
        self._engines.clear()


def build_agents(
    config: AgentsConfig,
    grader: AsyncGrader,
    *,
    mode: AgentMode = "inference",
    chat_model: BaseChatModel | None = None,
    engine: TokenEngine | None = None,
    reviewer_model: BaseChatModel | None = None,
    engines: EngineCache | None = None,
) -> Agents:
    """The agents ``config`` describes, for the ``mode`` graph.

    ``mode`` picks the Generator's backend: a TokenEngine called token-in/token-out (``training``) or a
    chat model (``inference``). Backends come from the config's specs unless given: ``chat_model``
    (inference Generator), ``engine`` (training Generator, also shared with a Reviewer on the same spec)
    and ``reviewer_model``. Engines built from specs come from ``engines`` (pass one cache to several
    builds to share model weights). In ``training`` mode an ``llm`` Reviewer on the Generator's spec (and
    no ``reviewer_model``) calls the Generator's engine token-in/token-out, so its reviews are recorded.
    """
    gen_spec = config.generator_model()
    engines = engines if engines is not None else EngineCache(config.vllm, timeout_s=config.timeout_s)
    if engine is not None:
        engines.add(gen_spec, engine)
    if mode == "training":
        generator = CodeGenerator(config.generator, engine=engine or engines.get(gen_spec))
    else:
        chat = chat_model or engines.chat_model(gen_spec, config.generator.sampling, role=CodeGenerator.role)
        generator = CodeGenerator(config.generator, chat_model=chat)
    reviewer: CodeReviewer | None = None
    if config.reviewer.backend == "static":
        reviewer = StaticReviewer(config.reviewer)
    elif config.reviewer.backend == "llm" and mode == "training" and reviewer_model is None \
            and config.reviewer_model() == gen_spec:
        # On the Generator's model in training: token-exact calls, so the Reviewer can be trained too.
        reviewer = LLMReviewer(config=config.reviewer, engine=engine or engines.get(gen_spec))
    elif config.reviewer.backend == "llm":
        model = reviewer_model or engines.chat_model(
            config.reviewer_model(), config.reviewer.sampling, role=REVIEWER_ROLE
        )
        reviewer = LLMReviewer(model, config.reviewer)
    return Agents(generator=generator, executor=CodeExecutor(grader, config.executor), reviewer=reviewer,
                  engines=engines)
