"""Load on the embedded model: requests/s and latency at concurrency 1, 8 and 32, then a soak run.

Reproduce:
    .venv/bin/python -m benchmarks.serving.load --requests 256 --soak 1000

``coding-framework serve`` (embedded model, local engine, its own process) gets chat completions of
``--max-tokens`` tokens from an asyncio client holding ``c`` requests in flight. Per concurrency level:
requests/s, p50/p99 latency and the status codes; the throughput ratio to concurrency 1 (the anchor, same
run) shows what the engine's micro-batching buys. The soak run sends ``--soak`` requests at concurrency
32 and must see 0 responses >= 500 (over-capacity answers are 429 with Retry-After, counted apart).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import time
from pathlib import Path
from typing import Any

import aiohttp

from benchmarks.harness import RESULTS, LoadMonitor, cpu_name, write_result
from benchmarks.serving.served import Served, percentile
from coding_framework.llm.vllm_server import free_port
from coding_framework.models import resolve_model


async def run_level(url: str, concurrency: int, requests: int, max_tokens: int) -> dict[str, Any]:
    body = {
        "messages": [{"role": "user", "content": "Write a function add(a, b)."}],
        "max_tokens": max_tokens,
    }
    latencies: list[float] = []
    codes: collections.Counter[int] = collections.Counter()
    todo = iter(range(requests))

    async def worker(session: aiohttp.ClientSession) -> None:
        for i in todo:
            began = time.perf_counter()
            async with session.post(f"{url}/v1/chat/completions", json={**body, "session_id": f"s{i}"}) as r:
                await r.read()
                codes[r.status] += 1
            latencies.append(time.perf_counter() - began)

    timeout = aiohttp.ClientTimeout(total=600)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        began = time.perf_counter()
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))
        wall = time.perf_counter() - began
    ms = [v * 1000 for v in latencies]
    return {
        "concurrency": concurrency,
        "requests": requests,
        "requests_per_s": requests / wall,
        "p50_ms": percentile(ms, 50),
        "p99_ms": percentile(ms, 99),
        "status": {str(k): v for k, v in sorted(codes.items())},
        "server_errors": sum(v for k, v in codes.items() if k >= 500),
    }


def plot(levels: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.5))
    cs = [lv["concurrency"] for lv in levels]
    a.plot(cs, [lv["requests_per_s"] for lv in levels], "o-")
    a.set_xlabel("concurrency")
    a.set_ylabel("requests/s")
    b.plot(cs, [lv["p50_ms"] for lv in levels], "o-", label="p50")
    b.plot(cs, [lv["p99_ms"] for lv in levels], "o-", label="p99")
    b.set_xlabel("concurrency")
    b.set_ylabel("latency (ms)")
    b.legend()
    fig.suptitle(f"embedded model behind the server\n{cpu_name()}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=256, help="Requests per concurrency level.")
    parser.add_argument("--soak", type=int, default=1000, help="Requests of the concurrency-32 soak run.")
    parser.add_argument("--max-tokens", type=int, default=16)
    args = parser.parse_args()
    port = free_port()
    config = {"model": "embedded", "limits": {"rate_per_s": 1e6, "rate_burst": 1 << 20}}
    with Served(config, port) as served, LoadMonitor() as load:
        asyncio.run(run_level(served.url, 4, 16, args.max_tokens))  # warm up
        levels = [asyncio.run(run_level(served.url, c, args.requests, args.max_tokens)) for c in (1, 8, 32)]
        soak = asyncio.run(run_level(served.url, 32, args.soak, args.max_tokens))
    anchor = levels[0]["requests_per_s"]
    for level in levels:
        level["throughput_ratio_to_c1"] = level["requests_per_s"] / anchor
    report = {
        "max_tokens": args.max_tokens,
        "levels": levels,
        "soak": soak,
        "soak_ok": soak["server_errors"] == 0,
    }
    write_result(RESULTS / "serving_load.json", report, load, model_dir=resolve_model("embedded").model_dir)
    plot(levels, RESULTS / "serving_load.png")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
