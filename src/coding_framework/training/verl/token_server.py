"""Token servers: Ray actors with verl's rollout-replica ``generate``, generating through one of our engines.

verl's ``LLMServerClient`` routes each call through its load balancer to a server actor and calls
``server.generate.remote(request_id=..., prompt_ids=..., sampling_params=..., image_data=...,
video_data=..., **kwargs)``, expecting a ``TokenOutput`` (verl 0.9.1, ``vLLMHttpServer.generate``). Any actor
with that method is a replica, so a ``TokenServer`` lets verl's own client, router, ``AgentLoopManager`` and
``AgentLoopWorker`` run on CPU over the local engine (the model in the actor's process) or a vLLM server
(our OpenAI-compatible engine; the server itself runs outside Ray).

The engine is built by the one builder (``llm.factory.build_engine``) from an ``LLMConfig``, so a model
directory's role adapters are attached as everywhere else. The call's ``role`` (which ``CodingAgentLoop``
sends when its ``send_role`` setting is on; verl forwards the client's extra keywords) selects the adapter:
the local engine decodes through it, the endpoint engine asks for its LoRA module (``role_models``).

Sampling follows vLLM's replica: ``temperature``, ``top_p``, ``max_tokens``, ``stop`` and ``logprobs``
are honoured; ``top_k`` and ``repetition_penalty`` are refused unless neutral (our engines have neither).
Logprobs are the engine's: the raw temperature-1 model distribution (vLLM ``--logprobs-mode
raw_logprobs``, as ``VLLMServer`` starts it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import ray
from verl.workers.rollout.replica import TokenOutput

from coding_framework.config.llm import LLMConfig
from coding_framework.config.model_ref import ModelRef
from coding_framework.llm.base import EngineError, SamplingParams
from coding_framework.llm.factory import build_engine
from coding_framework.llm.openai_compat import OpenAICompatibleEngine
from coding_framework.training.verl.lora import base_names, merge_lora

# The step verl reports for weights it never updated (``TokenOutput.extra_fields['global_steps']``).
INITIAL_STEP = 0


def local_config(model_dir: Path) -> LLMConfig:
    """The local engine over ``model_dir`` (its adapters attached), float32 on CPU as the audit needs."""
    return LLMConfig(model=ModelRef.directory(model_dir, engine="local"), device="cpu", dtype="float32")


def endpoint_config(url: str, served_name: str, tokenizer_dir: Path, timeout_s: float = 300.0) -> LLMConfig:
    """The OpenAI-compatible engine calling ``served_name`` at ``url``, tokenizing with ``tokenizer_dir``.

    The ref is built typed rather than parsed from ``openai:URL@MODEL``: a served name may hold an ``@``
    (``ResolvedModel.id`` is ``name@checksum``), which that spec cannot carry."""
    api = url.rstrip("/")
    api = api if api.endswith("/v1") else f"{api}/v1"
    return LLMConfig(model=ModelRef.endpoint(api, served_name),
                     tokenizer=ModelRef.directory(tokenizer_dir, engine="local"), timeout_s=timeout_s)


def sampling_from_verl(params: Mapping[str, Any], role: str | None = None) -> SamplingParams:
    """Our ``SamplingParams`` for verl's per-request sampling dict and the call's ``role``; a setting we
    cannot honour is an error."""
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
                          top_p=float(params.get("top_p", 1.0)), stop=tuple(params.get("stop") or ()),
                          role=role)


class TokenServer:
    """One verl rollout replica over one engine. Wrapped with ``ray.remote`` by ``start_token_servers``.

    ``role_models`` (endpoint engines only): role -> the served LoRA module its calls ask for."""

    def __init__(self, config: LLMConfig, role_models: Mapping[str, str] | None = None) -> None:
        self.config = config
        self.engine = build_engine(config)
        if role_models:
            if not isinstance(self.engine, OpenAICompatibleEngine):
                raise EngineError("role_models name an endpoint's LoRA modules; a local engine attaches "
                                  "the model directory's adapters itself")
            self.engine.role_models = dict(role_models)
        self.calls = 0
        self.generated_tokens = 0
        self.global_steps = INITIAL_STEP
        self.lora_base: dict[str, Any] | None = None  # the weights a LoRA update merges into (``load_lora``)

    async def generate(self, prompt_ids: Sequence[int], sampling_params: dict[str, Any], request_id: str,
                       image_data: Any = None, video_data: Any = None, role: str | None = None,
                       **kwargs: Any) -> TokenOutput:
        """verl's replica call: ``TokenOutput`` with the generated ids and, if asked, their logprobs;
        ``role`` (None: the base) picks the adapter the engine decodes through."""
        del request_id, kwargs  # per-turn ids (verl makes a fresh one each call); priority and the like
        if image_data is not None or video_data is not None:
            raise EngineError("the token servers are text-only")
        gen = await self.engine.agenerate(list(prompt_ids), sampling_from_verl(sampling_params, role))
        self.calls += 1
        self.generated_tokens += len(gen.token_ids)
        return TokenOutput(token_ids=list(gen.token_ids),
                           log_probs=list(gen.logprobs) if sampling_params.get("logprobs") else None,
                           stop_reason="completed", extra_fields={"global_steps": self.global_steps})

    def stats(self) -> dict[str, int]:
        return {"calls": self.calls, "generated_tokens": self.generated_tokens}

    # -- as verl's rollout replica in a training run (``cpu_rollout``) --------------------------------------

    def load_weights(self, state: Mapping[str, Any], global_steps: int | None = None) -> None:
        """The trainer's weights after step ``global_steps`` (every parameter, Hugging Face names); the
        generations that follow report that step."""
        step = INITIAL_STEP if global_steps is None else int(global_steps)
        self.engine.update_weights(state, str(step))  # type: ignore[attr-defined]  # local engine only
        self.global_steps = step

    def load_lora(self, tensors: Mapping[str, Any], peft_config: Mapping[str, Any], base_sync_done: bool,
                  global_steps: int | None = None) -> None:
        """verl's LoRA sync (``lora``): with ``base_sync_done`` false, ``tensors`` are the base (kept, and
        loaded); otherwise the adapter, merged into the kept base (the engine's starting weights when no
        base was sent) and loaded, so the generations that follow sample from the updated policy."""
        if not base_sync_done:
            self.lora_base = base_names(tensors)
            self.load_weights(self.lora_base, global_steps)
            return
        if self.lora_base is None:
            model = self.engine.model  # type: ignore[attr-defined]  # local engine only
            self.lora_base = {k: v.detach().clone() for k, v in model.state_dict().items()}
        self.load_weights(merge_lora(self.lora_base, tensors, peft_config), global_steps)

    def audit(self, batch: Any, tolerance: float) -> tuple[str, int, int]:
        """``audit.drift`` of verl's batch through the weights that generated it (this server's): the
        audit's first line, the offending tokens and the generated tokens checked."""
        from coding_framework.training.verl.audit import drift

        report, offending = drift(batch, self.engine.model, self.engine.tokenizer, tolerance,  # type: ignore[attr-defined]
                                  self.engine.adapters)  # type: ignore[attr-defined]
        return report.summary().splitlines()[0], offending, int(report.checked_tokens)

    async def sleep(self) -> None:
        return None

    async def wake_up(self) -> None:
        return None

    async def abort_all_requests(self, reject_request: bool = False) -> None:
        return None

    async def resume_generation(self) -> None:
        return None

    async def clear_kv_cache(self) -> None:
        return None

    async def release_kv_cache(self) -> None:
        return None

    async def resume_kv_cache(self) -> None:
        return None


def start_token_servers(config: LLMConfig, count: int,
                        role_models: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``count`` token-server actors, ready, as the ``{address: handle}`` map verl's router takes."""
    if count < 1:
        raise ValueError(f"need at least one token server, got {count}")
    actor: Any = ray.remote(TokenServer)
    handles = {f"token-server-{i}": actor.remote(config, role_models) for i in range(count)}
    ray.get([h.__ray_ready__.remote() for h in handles.values()])  # every model is loaded
    return handles
