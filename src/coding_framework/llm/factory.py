"""The one engine builder: a model (an ``LLMConfig``, a ``ModelRef`` or a spec) to a ``TokenEngine``.

The model is resolved (``models.resolve_model``), then run where its engine says: ``local`` loads it in
this process with its role adapters attached (each call decodes through its role's adapter); ``vllm``
starts a vLLM server with the adapters as LoRA modules (each role's calls ask for its adapter) and stops it
when the engine is closed; an endpoint is called as it is. Every place that loads a model (solve,
evaluate, data rank, the supervisor, the pyfunc, the trainer's starting model, the verl token servers)
builds through here, so none of them can drop the adapters.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, cast

from langchain_core.language_models import BaseChatModel

from coding_framework.config.llm import LLMConfig
from coding_framework.config.model_ref import ModelRef
from coding_framework.llm.base import EngineError, TokenEngine
from coding_framework.llm.chat_model import EngineChatModel
from coding_framework.models import ResolvedModel, resolve_model, role_adapter_map

if TYPE_CHECKING:
    from coding_framework.llm.local import LocalEngine
    from coding_framework.llm.openai_compat import OpenAICompatibleEngine
    from coding_framework.llm.vllm_server import VLLMServer

__all__ = ["attach_role_adapters", "build_chat_model", "build_engine", "resolve", "vllm_server_for"]

_MAX_CONTEXT = 8192  # a vLLM server's context by default: longer ones need more KV cache than the default


def _config(config: LLMConfig | ModelRef | str) -> LLMConfig:
    return config if isinstance(config, LLMConfig) else LLMConfig.from_spec(config)


def resolve(config: LLMConfig | ModelRef | str) -> ResolvedModel:
    """The model ``config`` names, resolved with its registry and embedded-model settings."""
    config = _config(config)
    return resolve_model(config.model, registry_uri=config.registry_uri, embedded=config.embedded)


def build_engine(config: LLMConfig | ModelRef | str, model: ResolvedModel | None = None) -> TokenEngine:
    """The engine that runs ``config``'s model (``model``: already resolved). A model error is one line."""
    config = _config(config)
    try:
        model = model or resolve(config)
    except ValueError as exc:
        raise EngineError(str(exc)) from None
    if model.base_url is not None:
        return _endpoint(model, config)
    engine = model.ref.engine or config.engine
    if engine == "local":
        return _local(model, config)
    if engine == "vllm":
        return _vllm(model, config)
    raise EngineError(
        f"model {model.spec!r}: the {engine} engine runs model-server replicas (serve, deploy); here a model "
        "runs on local or vllm"
    )


def _local(model: ResolvedModel, config: LLMConfig) -> LocalEngine:
    from coding_framework.llm.local import LocalEngine

    assert model.model_dir is not None
    engine = LocalEngine.from_pretrained(
        model.model_dir, device=config.device, dtype=config.dtype, max_batch_size=config.max_batch_size,
        policy_version=model.id,
    )
    attach_role_adapters(engine, model)
    return engine


def attach_role_adapters(engine: LocalEngine, model: ResolvedModel) -> None:
    """Each role's calls on ``engine`` decode through its adapter in ``model``'s directory (no-op without)."""
    from transformers import PreTrainedModel

    from coding_framework.llm.adapters import RoleAdapters
    from coding_framework.models import ADAPTERS_DIR

    policies = model.policies
    if policies is None:
        return
    assert model.model_dir is not None
    adapters = RoleAdapters(cast(PreTrainedModel, engine.model), policies)
    adapters.load(model.model_dir / ADAPTERS_DIR)
    engine.attach_adapters(adapters)


def vllm_server_for(
    model: ResolvedModel, settings: dict[str, object] | None = None, log_path: Path | None = None
) -> VLLMServer:
    """A vLLM server (not started) for ``model``: served as ``model.id``, each adapter a LoRA module; its
    output goes to ``log_path`` when given."""
    from coding_framework.llm.vllm_server import VLLMServer, VLLMServerConfig

    assert model.model_dir is not None
    lora = {a.name: a.path for a in model.adapters}
    context = {"max_model_len": n} if (n := _context_length(model.model_dir)) else {}
    config = VLLMServerConfig.model_validate(
        {**context, **(settings or {}), "served_model_name": model.id, "lora_modules": lora}
    )
    return VLLMServer(model.model_dir, config, log_path=log_path)


def _context_length(model_dir: Path) -> int | None:
    """The model's own context (``max_position_embeddings``), at most ``_MAX_CONTEXT``: a longer prompt
    than the server's ``max_model_len`` is refused outright (MBPP has 3.7k-token prompts)."""
    try:
        positions = json.loads((model_dir / "config.json").read_text()).get("max_position_embeddings")
    except (OSError, ValueError):
        return None
    return min(int(positions), _MAX_CONTEXT) if isinstance(positions, int) and positions >= 64 else None


def _vllm(model: ResolvedModel, config: LLMConfig) -> OpenAICompatibleEngine:
    # The log outlives the server, so a server that dies mid-run can be explained afterwards.
    fd, log_file = tempfile.mkstemp(prefix="coding-framework-vllm-", suffix=".log")
    os.close(fd)
    server = vllm_server_for(model, config.vllm, log_path=Path(log_file)).start()
    try:
        engine = server.engine(timeout_s=config.timeout_s, max_retries=config.max_retries,
                               role_models=role_adapter_map(model.adapters))
    except BaseException:
        server.stop()
        raise
    engine.launcher = server
    return engine


def _endpoint(model: ResolvedModel, config: LLMConfig) -> OpenAICompatibleEngine:
    from coding_framework.llm.openai_compat import OpenAICompatibleEngine

    assert model.base_url is not None and model.served_model is not None
    try:
        tokenizer = resolve_model(config.tokenizer, embedded=config.embedded)
    except ValueError as exc:
        raise EngineError(f"tokenizer: {exc}") from None
    return OpenAICompatibleEngine(
        base_url=model.base_url,
        model=model.served_model,
        tokenizer_path=tokenizer.model_dir,
        api_key=config.api_key or os.environ.get("OPENAI_API_KEY"),
        timeout_s=config.timeout_s,
        max_retries=config.max_retries,
    )


def build_chat_model(
    config: LLMConfig | ModelRef | str, engine: TokenEngine | None = None, role: str | None = None
) -> BaseChatModel:
    """A chat model over ``engine`` (built from ``config`` if not given) with its sampling defaults; its
    calls carry ``role`` (which adapter an engine with per-role adapters uses)."""
    config = _config(config)
    s = config.sampling
    return EngineChatModel(
        engine=engine if engine is not None else build_engine(config),
        max_new_tokens=s.max_new_tokens,
        temperature=s.temperature,
        top_p=s.top_p,
        seed=s.seed,
        stop=list(s.stop),
        role=role,
    )
