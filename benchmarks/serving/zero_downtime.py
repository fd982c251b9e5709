"""Zero downtime: swapping versions under load, and `kill -9` of a backend replica under load.

Reproduce:
    .venv/bin/python -m benchmarks.serving.zero_downtime --seconds 60

1. ``swap``: ``coding-framework serve`` (embedded model, local engine) under chat load at concurrency
   ``--concurrency``; an ``immediate`` rollout adds a second version (a copy of the embedded model under
   another name) while graded /v1/solve traffic starts, promotes it once ``min_graded`` graded answers came
   without an error burst, and retires the old champion. Every request must succeed, before, during and
   after.
2. ``kill``: the server with ``engine: process`` and two worker replicas under the same chat load; one
   worker gets SIGKILL a third of the way in. Its requests retry on the other replica; the pool ejects the
   dead one and restarts it. Every request must succeed.

Reported per phase: requests, failures (any status other than 200), status codes, p50/p99 latency, and
the event times; a plot shows every request's latency over time with the events marked.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

from benchmarks.harness import RESULTS, LoadMonitor, cpu_name, write_result
from benchmarks.serving.served import Served, percentile
from coding_framework.embedded import ensure_embedded_model
from coding_framework.llm.vllm_server import free_port

CHAT = {"messages": [{"role": "user", "content": "Write a function add(a, b)."}], "max_tokens": 8}
SOLVE = {
    "prompt": "Write a function add(a, b) that returns a + b.",
    "entry_point": "add",
    "tests": "assert add(1, 2) == 3\n",
    "max_rounds": 1,
}


class Load:
    """Closed-loop chat clients (and optional solve clients) recording (start, latency, status, version)."""

    def __init__(self, url: str) -> None:
        self.url, self.records, self.began = url, [], time.perf_counter()
        self.stop = asyncio.Event()

    async def client(self, session: aiohttp.ClientSession, path: str, body: dict[str, Any], tag: str) -> None:
        i = 0
        while not self.stop.is_set():
            i += 1
            began = time.perf_counter()
            try:
                async with session.post(f"{self.url}{path}", json={**body, "session_id": f"{tag}{i}"}) as r:
                    await r.read()
                    status, version = r.status, r.headers.get("x-model-version", "")
            except aiohttp.ClientError as exc:
                status, version = 0, type(exc).__name__
            self.records.append((began - self.began, time.perf_counter() - began, status, version))

    def summary(self) -> dict[str, Any]:
        ms = [r[1] * 1000 for r in self.records]
        codes = collections.Counter(r[2] for r in self.records)
        return {
            "requests": len(self.records),
            "failures": sum(r[2] != 200 for r in self.records),
            "status": {str(k): v for k, v in sorted(codes.items())},
            "p50_ms": percentile(ms, 50),
            "p99_ms": percentile(ms, 99),
            "versions": sorted({r[3] for r in self.records if r[2] == 200}),
        }


async def swap_phase(url: str, candidate: Path, concurrency: int, seconds: float) -> dict[str, Any]:
    load, events = Load(url), {}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=600)) as session:
        clients = [
            asyncio.create_task(load.client(session, "/v1/chat/completions", CHAT, f"c{k}-"))
            for k in range(concurrency)
        ]
        await asyncio.sleep(seconds / 4)
        events["rollout_started_s"] = time.perf_counter() - load.began
        async with session.post(
            f"{url}/v1/rollouts", json={"candidate": str(candidate), "strategy": "immediate"}
        ) as r:
            rollout = (await r.json())["id"]
        # Graded traffic starts with the rollout: with no graded champion history, `immediate` promotes
        # once the candidate has answered `min_graded` graded requests without an error burst.
        clients += [asyncio.create_task(load.client(session, "/v1/solve", SOLVE, f"s{k}-")) for k in range(2)]
        status: dict[str, Any] = {"status": "running"}
        while status["status"] == "running" and time.perf_counter() - load.began < seconds * 4:
            await asyncio.sleep(1)
            async with session.get(f"{url}/v1/rollouts/{rollout}") as r:
                status = await r.json()
        events["rollout_ended_s"] = time.perf_counter() - load.began
        await asyncio.sleep(seconds / 4)  # the old champion is retired meanwhile (after drain_s)
        load.stop.set()
        await asyncio.gather(*clients)
    settled = events["rollout_ended_s"] + 2.0  # past drain_s: the old champion is retired
    return {
        **load.summary(),
        "events": events,
        "versions_after_swap": sorted({r[3] for r in load.records if r[0] > settled and r[2] == 200}),
        "rollout_status": status["status"],
        "reason": status.get("reason"),
        "records": load.records,
    }


def worker_pids(server_pid: int) -> list[int]:
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmd = (proc / "cmdline").read_bytes()
            ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == server_pid and b"coding_framework.serving.worker" in cmd:
            found.append(int(proc.name))
    return found


async def kill_phase(url: str, server_pid: int, concurrency: int, seconds: float) -> dict[str, Any]:
    load, events = Load(url), {}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=600)) as session:
        clients = [
            asyncio.create_task(load.client(session, "/v1/chat/completions", CHAT, f"k{k}-"))
            for k in range(concurrency)
        ]
        await asyncio.sleep(seconds / 3)
        victim = worker_pids(server_pid)[0]
        os.kill(victim, signal.SIGKILL)
        events["killed_s"], events["killed_pid"] = time.perf_counter() - load.began, victim
        await asyncio.sleep(seconds * 2 / 3)
        load.stop.set()
        await asyncio.gather(*clients)
    return {**load.summary(), "events": events, "records": load.records}


def plot(phases: dict[str, dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(phases), figsize=(5 * len(phases), 3.5), squeeze=False)
    for ax, (name, phase) in zip(axes[0], phases.items(), strict=True):
        ok = [(r[0], r[1] * 1000) for r in phase["records"] if r[2] == 200]
        bad = [(r[0], r[1] * 1000) for r in phase["records"] if r[2] != 200]
        ax.scatter(*zip(*ok, strict=True), s=3, label="200") if ok else None
        ax.scatter(*zip(*bad, strict=True), s=12, c="red", label="failed") if bad else None
        for event, at in phase["events"].items():
            if event.endswith("_s"):
                ax.axvline(at, color="gray", ls="--")
                ax.text(at, ax.get_ylim()[1] * 0.9, event[:-2], rotation=90, fontsize=7)
        ax.set_title(f"{name}: {phase['failures']} failed of {phase['requests']}")
        ax.set_xlabel("time (s)")
        ax.set_ylabel("latency (ms)")
    fig.suptitle(cpu_name(), fontsize=9)
    fig.tight_layout()
    fig.savefig(path)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    limits = {"rate_per_s": 1e6, "rate_burst": 1 << 20}
    model = ensure_embedded_model()
    candidate = Path(tempfile.mkdtemp()) / "embedded-next"
    shutil.copytree(model, candidate)
    swap_config = {
        "model": "embedded",
        "limits": limits,
        "solve": {"max_rounds": 1},
        "rollout": {"min_graded": 5, "drain_s": 1.0},
        "mlflow_uri": f"sqlite:///{candidate.parent / 'mlflow.db'}",
    }
    kill_config = {
        "model": "embedded",
        "engine": "process",
        "limits": limits,
        "pool": {"replicas": 2, "health_interval_s": 0.5},
    }
    with LoadMonitor() as load:
        with Served(swap_config, free_port()) as served:
            swap = asyncio.run(swap_phase(served.url, candidate, args.concurrency, args.seconds))
        with Served(kill_config, free_port()) as served:
            assert served.proc is not None
            kill = asyncio.run(kill_phase(served.url, served.proc.pid, args.concurrency, args.seconds))
    shutil.rmtree(candidate.parent, ignore_errors=True)
    phases = {"swap": swap, "kill": kill}
    plot(phases, RESULTS / "serving_zero_downtime.png")
    report = {name: {k: v for k, v in p.items() if k != "records"} for name, p in phases.items()}
    report["zero_failed"] = swap["failures"] == 0 and kill["failures"] == 0
    write_result(RESULTS / "serving_zero_downtime.json", report, load, model_dir=model)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
