"""Token servers: Ray actors with verl's rollout-replica ``generate``, generating through one of our engines.

verl's ``LLMServerClient`` routes each call through its load balancer to a server actor and calls
``server.generate.remote(request_id=..., prompt_ids=..., sampling_params=..., image_data=...,
video_data=...)``, expecting a ``TokenOutput`` (verl 0.9.1, ``vLLMHttpServer.generate``). Any actor with
that method is a replica, so a ``TokenServer`` lets verl's own client, router, ``AgentLoopManager`` and
``AgentLoopWorker`` run on CPU over the local engine (the model in the actor's process) or a vLLM server
(our OpenAI-compatible engine; the server itself runs outside Ray).

Sampling follows vLLM's replica: ``temperature``, ``top_p``, ``max_tokens``, ``stop`` and ``logprobs``
are honoured; ``top_k`` and ``repetition_penalty`` are refused unless neutral (our engines have neither).
Logprobs are the engine's: the raw temperature-1 model distribution (vLLM ``--logprobs-mode
raw_logprobs``, as ``VLLMServer`` starts it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import ray
from pydantic import BaseModel, ConfigDict
from verl.workers.rollout.replica import TokenOutput

from coding_framework.llm.base import EngineError, SamplingParams, TokenEngine

# The step verl reports for weights it never updated (``TokenOutput.extra_fields['global_steps']``).
INITIAL_STEP = 0


class EngineSpec(BaseModel):
    """What a token server generates with: ``local`` loads ``model_dir`` in the actor (fp32, CPU);
    ``openai`` calls the server at ``base_url`` serving ``served_name``, tokenizing with ``model_dir``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["local", "openai"]
    model_dir: Path
    base_url: str | None = None
    served_name: str | None = None
    timeout_s: float = 300.0


def build_engine(spec: EngineSpec) -> TokenEngine:
    if spec.kind == "local":
        from coding_framework.llm.local import LocalEngine

        return LocalEngine.from_pretrained(spec.model_dir, device="cpu", dtype="float32")
    from coding_framework.llm.openai_compat import OpenAICompatibleEngine

    if not spec.base_url or not spec.served_name:
        raise EngineError("an openai token server needs base_url and served_name")
    return OpenAICompatibleEngine(spec.base_url, spec.served_name, tokenizer_path=spec.model_dir,
                                  timeout_s=spec.timeout_s)


def sampling_from_verl(params: Mapping[str, Any]) -> SamplingParams:
    """Our ``SamplingParams`` for verl's per-request sampling dict; a setting we cannot honour is an error."""
    top_k = params.get("top_k", -1)
    if top_k not in (None, -1, 0):
        raise EngineError(f"top_k={top_k}: the token servers sample without top-k; set "
                          "actor_rollout_ref.rollout.top_k=-1")
    penalty = params.get("repetition_penalty", 1.0)
    if penalty not in (None, 1.0):
        raise EngineError(f"repetition_penalty={penalty}: the token servers have none; set it to 1.0")
    if "max_tokens" not in params:
        raise EngineError("verl sent no max_tokens; the agent loop caps every call")
    return SamplingParams(max_new_tokens=int(params["max_tokens"]),
                          temperature=float(params.get("temperature", 1.0)),
                          top_p=float(params.get("top_p", 1.0)), stop=tuple(params.get("stop") or ()))


class TokenServer:
    """One verl rollout replica over one engine. Wrapped with ``ray.remote`` by ``start_token_servers``."""

    def __init__(self, spec: EngineSpec) -> None:
        self.spec = spec
        self.engine = build_engine(spec)
        self.calls = 0
        self.generated_tokens = 0

    async def generate(self, prompt_ids: Sequence[int], sampling_params: dict[str, Any], request_id: str,
                       image_data: Any = None, video_data: Any = None, **kwargs: Any) -> TokenOutput:
        """verl's replica call: ``TokenOutput`` with the generated ids and, if asked, their logprobs."""
        del request_id, kwargs  # per-turn ids (verl makes a fresh one each call); priority and the like
        if image_data is not None or video_data is not None:
            raise EngineError("the token servers are text-only")
        gen = await self.engine.agenerate(list(prompt_ids), sampling_from_verl(sampling_params))
        self.calls += 1
        self.generated_tokens += len(gen.token_ids)
        return TokenOutput(token_ids=list(gen.token_ids),
                           log_probs=list(gen.logprobs) if sampling_params.get("logprobs") else None,
                           stop_reason="completed", extra_fields={"global_steps": INITIAL_STEP})

    def stats(self) -> dict[str, int]:
        return {"calls": self.calls, "generated_tokens": self.generated_tokens}


def start_token_servers(spec: EngineSpec, count: int) -> dict[str, Any]:
    """``count`` token-server actors, ready, as the ``{address: handle}`` map verl's router takes."""
    if count < 1:
        raise ValueError(f"need at least one token server, got {count}")
    actor: Any = ray.remote(TokenServer)
    handles = {f"token-server-{i}": actor.remote(spec) for i in range(count)}
    ray.get([h.__ray_ready__.remote() for h in handles.values()])  # every model is loaded
    return handles
