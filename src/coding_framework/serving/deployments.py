"""The versions this server holds, their replica pools, and the rollout hooks (deploy, retire, registry).

``deploy`` resolves a spec (``models.resolve_model``: a registry version is attested) and starts its
replicas: in this process (``engine: local``), as vLLM-CPU servers (``vllm``) or as worker processes
(``process``); an endpoint spec is an external endpoint whatever the engine. A spec may name its engine,
overriding the server's: ``vllm:models:/gen@challenger``, ``local:/path/to/model``, ``process:embedded``.

A version with per-role adapters runs as one set of role policies on every engine: the local engine
attaches them (``RoleAdapters``: each call decodes through its role's adapter, mixed roles in one batch),
vLLM serves them as LoRA modules (each role's requests ask for its adapter by name), and a worker process
does as the local engine.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import aiohttp

from coding_framework.config.llm import LLMConfig
from coding_framework.config.model_ref import parse_model_ref
from coding_framework.config.serving import ServingConfig
from coding_framework.llm.base import EngineError
from coding_framework.llm.factory import build_engine, vllm_server_for
from coding_framework.logs import get_logger
from coding_framework.models import ResolvedModel, resolve_model, role_adapter_map
from coding_framework.serving.backends import HttpReplica, LocalReplica, Replica
from coding_framework.serving.pool import HealthMonitor, VersionPool
from coding_framework.serving.roles import check_role

log = get_logger(__name__)


class Deployments:
    """Implements ``RolloutHooks``. ``pools`` maps ``Version.id`` to its pool; names map to ids too.
    ``resolved``: models already resolved, each used once, by the first deploy of the spec it came from."""

    def __init__(self, config: ServingConfig, resolved: Sequence[ResolvedModel] = ()) -> None:
        self.config = config
        self._resolved = {str(model.ref): model for model in resolved}
        self.versions: dict[str, ResolvedModel] = {}
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
            if model in (v.name, v.spec, v.ref.without_engine().spec):
                return v.id
        return None

    def role_for(self, version_id: str, role: str | None) -> str | None:
        """The role a request to ``version_id`` calls as; a 400 for one it cannot (``roles.check_role``)."""
        version = self.versions.get(version_id)
        return role if version is None else check_role(version, role)

    async def deploy(self, spec: str) -> str:
        """Resolve ``spec`` (a ``ModelRef``; an engine prefix picks its engine) and start its replicas; a
        ValueError with one line when it names nothing that can run."""
        ref = parse_model_ref(spec)
        engine = ref.engine or self.config.engine
        version = self._resolved.pop(str(ref), None)
        if version is None:
            version = await asyncio.to_thread(
                resolve_model, ref, registry_uri=self.config.mlflow_uri, cache_dir=self.config.model_cache
            )
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

    async def _replicas(self, version: ResolvedModel, engine: str) -> list[Replica]:
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

    async def _local(self, version: ResolvedModel, name: str) -> Replica:
        config = LLMConfig(model=version.ref, engine="local", device=self.config.device)
        engine = await asyncio.to_thread(build_engine, config, version)
        return LocalReplica(engine, name)

    async def _vllm(self, version: ResolvedModel, name: str) -> Replica:
        server = vllm_server_for(version, self.config.vllm)
        await asyncio.to_thread(server.start)
        return HttpReplica(name, f"{server.url}/v1", version.id, self.session, launcher=server,
                           role_models=role_adapter_map(version.adapters))

    async def _process(self, version: ResolvedModel, name: str) -> Replica:
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
                "roles": role_adapter_map(v.adapters),
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

