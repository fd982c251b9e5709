"""vLLM-CPU's thread layout on a small machine: its default, which keeps one core for the engine's scheduler,
against letting the model's OpenMP threads use every core.

Reproduce (from the repo root; MBPP from ../shared/data; about 4 minutes on 2 cores):

    .venv/bin/python -m benchmarks.training.vllm_cpu_threads

On x86, vLLM-CPU reserves one core for its engine-core process, which busy-waits on the worker's replies
(a `sched_yield` loop), and binds the model's OpenMP threads to the rest: one thread on a 2-core machine.
The `all-cores` arm sets `VLLM_CPU_NUM_OF_RESERVED_CPU=0` and `VLLM_CPU_OMP_THREADS_BIND=0-(N-1)`, so the
model runs on every core and the scheduler's loop yields to it. Each arm starts its own server for
`smollm2-135m` (bf16, as `evaluate --model vllm:...` serves it; 32 sequences in a batch) and sends the same
``--prompts`` MBPP-test prompts as chat requests, 32 in flight, sampled at T = 0.8 with a fixed seed, at
most ``--max-tokens`` tokens each. tokens/s is the completion tokens over the wall time of the best of
``--repeats`` passes, after one warm-up request; the default layout is the anchor.
Results: benchmarks/results/vllm_cpu_threads.json, with the machine record and the model's sha256.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from unittest.mock import patch

from benchmarks.harness import RESULTS, ROOT, LoadMonitor, write_result
from coding_framework.llm.vllm_server import VLLMServer, VLLMServerConfig
from coding_framework.models import resolve_model

RESULT = RESULTS / "vllm_cpu_threads.json"
MBPP = ROOT.parent / "shared" / "data" / "mbpp" / "mbpp.jsonl"
IN_FLIGHT = 32


def layouts(cores: int) -> dict[str, dict[str, str]]:
    return {"default": {}, "all-cores": {"VLLM_CPU_NUM_OF_RESERVED_CPU": "0",
                                         "VLLM_CPU_OMP_THREADS_BIND": f"0-{cores - 1}"}}


def chat(url: str, prompt: str, max_tokens: int, seed: int) -> int:
    """One chat completion; its completion tokens."""
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": prompt}], "temperature": 0.8,
                       "max_tokens": max_tokens, "seed": seed}).encode()
    request = urllib.request.Request(f"{url}/v1/chat/completions", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as answer:
        return int(json.load(answer)["usage"]["completion_tokens"])


def run_arm(model_dir: Path, settings: dict[str, str], prompts: list[str], max_tokens: int,
            repeats: int) -> dict[str, Any]:
    config = VLLMServerConfig(max_num_seqs=IN_FLIGHT, max_model_len=8192, served_model_name="m")
    # the server inherits the layout from the environment at start; patch.dict restores it afterwards
    with patch.dict(os.environ, settings), VLLMServer(model_dir, config) as server:
        chat(server.url, prompts[0], max_tokens, 0)
        passes = []
        for _ in range(repeats):
            began = time.perf_counter()
            with ThreadPoolExecutor(IN_FLIGHT) as pool:
                counts = pool.map(lambda i: chat(server.url, prompts[i], max_tokens, i), range(len(prompts)))
                tokens = sum(counts)
            passes.append((tokens / (time.perf_counter() - began), tokens))
        best, tokens = max(passes)
        return {"environment": settings, "tokens_per_s": best, "completion_tokens": tokens,
                "passes_tokens_per_s": [p[0] for p in passes], "server_start_s": server.startup_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--prompts", type=int, default=64)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    resolved = resolve_model(args.model)
    rows = [json.loads(line) for line in MBPP.read_text().splitlines()]
    prompts = [row["text"] for row in rows if 11 <= row["task_id"] <= 510][: args.prompts]
    cores = os.cpu_count() or 1
    with LoadMonitor() as load:
        arms = {name: run_arm(resolved.model_dir, settings, prompts, args.max_tokens, args.repeats)
                for name, settings in layouts(cores).items()}
    figures = {"model": args.model, "model_id": resolved.id, "prompts": len(prompts), "in_flight": IN_FLIGHT,
               "max_tokens": args.max_tokens, "arms": arms,
               "all_cores_over_default": arms["all-cores"]["tokens_per_s"] / arms["default"]["tokens_per_s"]}
    print(write_result(RESULT, figures, load, model_dir=resolved.model_dir))


if __name__ == "__main__":
    main()
