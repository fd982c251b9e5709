"""Replica pools: ejection, retries on the same version, re-admission, and a backend killed under load."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import signal
import time

import aiohttp
import httpx
import pytest

from coding_framework.config.serving import PoolConfig, ServingConfig
from coding_framework.llm.vllm_server import free_port
from coding_framework.serving import ServerThread
from coding_framework.serving.backends import HttpReplica
from coding_framework.serving.errors import APIError
from coding_framework.serving.pool import Admission, VersionPool
from coding_framework.serving.schemas import parse_chat
from coding_framework.testing.upstream import MockUpstream
from tests.serving.conftest import chat_body

REQUEST = parse_chat(chat_body(), {}, ServingConfig().limits)


async def _pool(urls: list[str], **config: object) -> tuple[VersionPool, aiohttp.ClientSession]:
    client = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5))
    replicas = [HttpReplica(f"r{i}", url, "mock", client) for i, url in enumerate(urls)]
    return VersionPool("v@1", list(replicas), PoolConfig(**config)), client  # type: ignore[arg-type]


async def test_a_dead_replica_is_ejected_and_its_requests_retry_on_a_healthy_one() -> None:
    with MockUpstream("hi") as up:
        pool, client = await _pool([f"http://127.0.0.1:{free_port()}/v1", up.url])
        answers = [await pool.call(lambda r: r.chat(REQUEST, "v@1")) for _ in range(10)]
        await client.close()
    assert all(b'"hi"' in a.body for a in answers) and up.requests == 10
    assert pool.healthy == 1 and not pool.slots[0].healthy


async def test_no_healthy_replica_is_a_retryable_429_not_a_5xx() -> None:
    pool, client = await _pool([f"http://127.0.0.1:{free_port()}/v1"] * 2)
    with pytest.raises(APIError) as err:
        await pool.call(lambda r: r.chat(REQUEST, "v@1"))
    await client.close()
    assert err.value.status == 429 and err.value.code == "backend_unavailable" and err.value.retry_after


async def test_probes_eject_a_failing_replica_and_readmit_it_once_it_recovers() -> None:
    with MockUpstream("hi", status=503) as up:
        pool, client = await _pool([up.url], restart_dead=False)
        await pool.probe()
        assert pool.healthy == 0
        up.status = 200
        await pool.probe()
        await client.close()
    assert pool.healthy == 1


async def test_admission_holds_a_bounded_queue() -> None:
    admission = Admission(PoolConfig(max_concurrency=1, queue_size=1))
    release = asyncio.Event()

    async def hold() -> None:
        async with admission.slot():
            await release.wait()

    tasks = [asyncio.create_task(hold()) for _ in range(2)]
    await asyncio.sleep(0.01)
    with pytest.raises(APIError) as err:
        admission.enter()
    release.set()
    await asyncio.gather(*tasks)
    assert err.value.status == 429 and err.value.code == "queue_full" and admission.pending == 0


@pytest.mark.slow
def test_kill_9_of_a_worker_replica_fails_no_request() -> None:
    config = ServingConfig(port=0, engine="process", pool=PoolConfig(replicas=2, health_interval_s=0.5))
    with ServerThread(config) as server:
        pool = next(iter(server.app.state.server.deployments.pools.values()))
        victim = pool.slots[0].replica.launcher.pid
        body = chat_body(max_tokens=4)

        def send(i: int) -> int:
            if i == 10:
                os.kill(victim, signal.SIGKILL)
            return httpx.post(f"{server.url}/v1/chat/completions", json=body, timeout=120).status_code

        with concurrent.futures.ThreadPoolExecutor(4) as threads:
            codes = list(threads.map(send, range(60)))
        assert codes == [200] * 60
        # The dead replica was ejected (only an ejected replica is restarted), restarted as a new process
        # and re-admitted. How far that got while the 60 requests ran depends on the machine's speed.
        slot = pool.slots[0]
        deadline = time.monotonic() + 180
        while not (slot.healthy and slot.replica.launcher.pid not in (None, victim)):
            assert time.monotonic() < deadline, "the killed replica was not restarted and re-admitted"
            time.sleep(0.2)
