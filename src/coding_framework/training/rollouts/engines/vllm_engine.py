"""Rollouts on a vLLM server (``rollout.engine: vllm``): each published policy version's LoRA adapters are
written to disk and loaded into the server under new names (``<adapter>-<run tag>-v<version>``).

vLLM keys its prefix cache and its LoRA slots by adapter name, so a name is never reused for other weights:
a batch that asks for ``policy-1a2b3c-v3`` gets version 3's weights even after version 4 was loaded, and
runs sharing one server (``engine_url``) never meet each other's names. Versions no batch will ask for
again are unloaded, and the rest when the run ends. A full fine-tune cannot reach a running server this
way, which the training config refuses up front.
"""

from __future__ import annotations

import secrets
import shutil
import time
from pathlib import Path
from typing import Any

import httpx
from safetensors.torch import save_file

from coding_framework.config.policies import AGENT_ROLES, PoliciesConfig
from coding_framework.config.training import TrainingConfig
from coding_framework.llm.adapters import RoleAdapters
from coding_framework.llm.base import EngineError, TokenEngine
from coding_framework.llm.local import LocalEngine
from coding_framework.llm.openai_compat import OpenAICompatibleEngine
from coding_framework.llm.vllm_server import VLLMServer, VLLMServerConfig, default_venv
from coding_framework.logs import get_logger
from coding_framework.models.layout import ADAPTER_FILE
from coding_framework.training.rollouts.engines.base import (
    PolicySnapshot,
    PolicyWeights,
    RolloutEngine,
    register_rollout_engine,
)

__all__ = ["VLLMRolloutEngine", "adapter_name", "vllm_engine"]

log = get_logger(__name__)


def adapter_name(adapter: str, tag: str, version: int) -> str:
    return f"{adapter}-{tag}-v{version}"


def _vllm_venv() -> Path:
    """``$CODING_FRAMEWORK_VLLM_VENV`` or ``.venv-vllm`` when it exists, else the environment of the
    ``vllm`` on PATH (its ``bin/`` holds the python that runs it)."""
    default = default_venv()
    found = shutil.which("vllm")
    if (default / "bin" / "python").is_file() or found is None:
        return default
    return Path(found).parent.parent


class VLLMRolloutEngine:
    """Starts a vLLM server on ``base_dir`` (the frozen base model, with its tokenizer) from
    ``rollout.vllm``'s venv, or attaches to ``rollout.engine_url``; stops what it started on ``close``."""

    def __init__(self, config: TrainingConfig, base_dir: Path, adapters: RoleAdapters, tokenizer: Any,
                 work_dir: Path) -> None:
        self.policies: PoliciesConfig = config.policies
        self.adapters, self.tokenizer = adapters, tokenizer
        self.work_dir = work_dir
        self.roles = sorted({*AGENT_ROLES, *self.policies.roles, *config.rollout.trained_roles})
        self.tag = secrets.token_hex(3)
        self.published: list[int] = []
        self._engines: dict[int, OpenAICompatibleEngine] = {}
        self.server: VLLMServer | None = None
        rollout = config.rollout
        # Requests beyond what the server decodes together would wait in its queue, and the wait counts
        # against each request's timeout: a loaded CPU then times out requests that never started.
        self.max_concurrency = rollout.vllm.max_num_seqs
        self.request_timeout_s = rollout.vllm.request_timeout_s
        if (attached := rollout.engine_url) is not None:
            assert attached.url is not None and attached.served_model is not None  # an EndpointSpec's
            self.url, self.model = attached.url.removesuffix("/v1"), attached.served_model
        else:
            settings: dict[str, Any] = {
                "served_model_name": "base", "dtype": rollout.vllm.dtype,
                "max_num_seqs": rollout.vllm.max_num_seqs, "max_model_len": rollout.vllm.max_model_len,
                "kv_cache_gib": rollout.vllm.kv_cache_gib, "cpu_threads": rollout.vllm.cpu_threads,
                "first_cpu": rollout.vllm.first_cpu,
                "max_lora_rank": self.policies.rank,
                # every version a batch in flight may ask for, of every adapter, plus the one loading
                "runtime_loras": (rollout.max_staleness + 2) * len(adapters.names),
            }
            settings["venv"] = rollout.vllm.venv or _vllm_venv()
            work_dir.mkdir(parents=True, exist_ok=True)
            self.server = VLLMServer(base_dir, VLLMServerConfig(**settings), log_path=work_dir / "vllm.log")
            self.server.start()
            self.url, self.model = self.server.url, self.server.name
        self._http = httpx.Client(base_url=self.url, timeout=120)

    @property
    def startup_s(self) -> float | None:
        return self.server.startup_s if self.server is not None else None

    def publish(self, version: int, snapshot: PolicySnapshot) -> float:
        """Write the version's adapters and load them into the server; the seconds it took."""
        started = time.perf_counter()
        for name, state in snapshot.items():
            target = self.work_dir / f"v{version}" / name
            target.mkdir(parents=True, exist_ok=True)
            save_file({k: v.contiguous() for k, v in state.items()}, target / ADAPTER_FILE)
            self.adapters.peft.peft_config[name].save_pretrained(str(target))
            self._post("/v1/load_lora_adapter",
                       {"lora_name": adapter_name(name, self.tag, version),
                        "lora_path": str(target.resolve())})
        self.published.append(version)
        return time.perf_counter() - started

    def engine_for(self, version: int) -> TokenEngine:
        if version not in self.published:
            raise RuntimeError(f"policy version {version} was not published to the vLLM server")
        if version not in self._engines:
            roles = {role: adapter_name(a, self.tag, version) for role in self.roles
                     if (a := self.policies.adapter_for(role)) is not None}
            self._engines[version] = OpenAICompatibleEngine(
                self.url, self.model, self.tokenizer, role_models=roles, version_tag=str(version),
                max_concurrency=self.max_concurrency, timeout_s=self.request_timeout_s,
            )
        return self._engines[version]

    def retire(self, oldest: int) -> None:
        for version in [v for v in self.published if v < oldest]:
            for name in self.adapters.names:
                self._post("/v1/unload_lora_adapter", {"lora_name": adapter_name(name, self.tag, version)})
            shutil.rmtree(self.work_dir / f"v{version}", ignore_errors=True)
            self.published.remove(version)
            if (engine := self._engines.pop(version, None)) is not None:
                engine.close()

    def close(self) -> None:
        if self.server is None and self.published:  # an attached server outlives the run: unload ours
            self.retire(max(self.published) + 1)
        for engine in self._engines.values():
            engine.close()
        self._engines.clear()
        self._http.close()
        if self.server is not None:
            self.server.stop()
            self.server = None

    def _post(self, path: str, body: dict[str, Any]) -> None:
        try:
            response = self._http.post(path, json=body)
        except httpx.HTTPError as exc:
            raise EngineError(f"the vLLM server at {self.url} did not answer {path}: {exc}") from exc
        if response.status_code >= 400:
            raise EngineError(f"the vLLM server at {self.url} refused {path} {body}: "
                              f"{response.status_code} {response.text[:300]}")


@register_rollout_engine("vllm")
def vllm_engine(config: TrainingConfig, engine: LocalEngine, policy: PolicyWeights,
                work_dir: Path) -> RolloutEngine:
    """A vLLM server on the policy's base model, saved to ``work_dir/base``, loaded with its adapters."""
    assert policy.adapters is not None  # the config refuses vllm without adapters
    policy.save_model(work_dir / "base", engine.tokenizer)
    return VLLMRolloutEngine(config, work_dir / "base", policy.adapters, engine.tokenizer, work_dir)
