"""Router overhead: latency the model server adds over calling its backend directly.

Reproduce:
    .venv/bin/python -m benchmarks.serving.overhead --pairs 5000

Interleaved mock-upstream method (the one LiteLLM's 4.3 ms and portkey's 2.4 ms were measured with): a
fast OpenAI-compatible mock upstream (``src/coding_framework/testing/upstream.py``, uvicorn + httptools,
its own process) is served as the champion of ``coding-framework serve`` (its own process). The client
sends the same chat completion alternately straight to the upstream and through the server (order flipped
every pair, one keep-alive connection each), so drift and noise hit both paths alike. Reported: median
and p99 of each path, the added latency as the difference of those percentiles (the anchor is the direct
path measured in the same run), and the median of per-pair differences. Targets: median <= 1.5 ms, p99 <=
5 ms added.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.harness import RESULTS, ROOT, LoadMonitor, cpu_name, write_result
from benchmarks.serving.served import Served, percentile
from coding_framework.llm.vllm_server import free_port

BODY = json.dumps(
    {"model": "default", "messages": [{"role": "user", "content": "add two numbers"}], "max_tokens": 16}
).encode()


def timed_post(conn: http.client.HTTPConnection, path: str, model: str) -> float:
    body = BODY if model == "default" else BODY.replace(b'"default"', json.dumps(model).encode())
    began = time.perf_counter()
    conn.request("POST", path, body, {"content-type": "application/json"})
    response = conn.getresponse()
    response.read()
    elapsed = time.perf_counter() - began
    if response.status != 200:
        raise RuntimeError(f"{path} answered {response.status}")
    return elapsed


def measure(up_port: int, router_port: int, pairs: int, warmup: int) -> tuple[list[float], list[float]]:
    direct_conn = http.client.HTTPConnection("127.0.0.1", up_port)
    router_conn = http.client.HTTPConnection("127.0.0.1", router_port)
    direct, routed = [], []
    for i in range(warmup + pairs):
        calls = [("d", direct_conn), ("r", router_conn)]
        if i % 2:
            calls.reverse()
        for kind, conn in calls:
            t = timed_post(conn, "/v1/chat/completions", "mock" if kind == "d" else "default")
            if i >= warmup:
                (direct if kind == "d" else routed).append(t)
    return direct, routed


def plot(direct: list[float], routed: list[float], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for values, label in ((direct, "direct to upstream"), (routed, "through the server")):
        ms = sorted(v * 1000 for v in values)
        ax.plot(ms, [i / len(ms) for i in range(len(ms))], label=label)
    ax.set_xlabel("latency (ms)")
    ax.set_ylabel("share of requests")
    ax.set_xscale("log")
    ax.set_title(f"router overhead, interleaved mock upstream\n{cpu_name()}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pairs", type=int, default=5000)
    parser.add_argument("--warmup", type=int, default=300)
    args = parser.parse_args()
    up_port, router_port = free_port(), free_port()
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"}
    upstream = subprocess.Popen(
        [sys.executable, "-m", "coding_framework.testing.upstream", str(up_port)], env=env
    )
    config = {
        "model": f"http://127.0.0.1:{up_port}/v1@mock",
        "limits": {"rate_per_s": 1e9, "rate_burst": 1 << 30},
    }
    try:
        with Served(config, router_port), LoadMonitor() as load:
            direct, routed = measure(up_port, router_port, args.pairs, args.warmup)
    finally:
        upstream.terminate()
        upstream.wait()
    ms = {name: [v * 1000 for v in values] for name, values in (("direct", direct), ("routed", routed))}
    pair_diff = [r - d for r, d in zip(ms["routed"], ms["direct"], strict=True)]
    report = {
        "pairs": args.pairs,
        "direct_ms": {"p50": percentile(ms["direct"], 50), "p99": percentile(ms["direct"], 99)},
        "routed_ms": {"p50": percentile(ms["routed"], 50), "p99": percentile(ms["routed"], 99)},
        "median_per_pair_added_ms": statistics.median(pair_diff),
        "note": "measured while other jobs shared the CPU" if os.environ.get("BENCH_SHARED") else "",
    }
    report["added_ms"] = {q: report["routed_ms"][q] - report["direct_ms"][q] for q in ("p50", "p99")}
    report["meets_targets"] = report["added_ms"]["p50"] <= 1.5 and report["added_ms"]["p99"] <= 5.0
    write_result(RESULTS / "serving_overhead.json", report, load)
    plot(direct, routed, RESULTS / "serving_overhead.png")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
