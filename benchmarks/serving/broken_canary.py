"""Issue 46's operator scenario: a canary of a model with random weights, on chat-only traffic, decided by
probes; then an A/A (a copy of the champion) on the same server.

Reproduce (embedded champion, builtin probes, then an A/A with greedy decoding on probes it passes some of;
then SmolLM2-135M on vLLM-CPU with MBPP-validation probes, one draft per probe):

    .venv/bin/python -m benchmarks.serving.broken_canary --runs 5 --aa 1 --aa-probe synthetic:train
    .venv/bin/python -m benchmarks.serving.broken_canary --runs 0 --aa 1 --probe synthetic:train \
        --temperature 0 --max-duration 3600 --suffix _aa_greedy
    export CODING_FRAMEWORK_DATA_DIR=../shared/data
    .venv/bin/python -m benchmarks.serving.broken_canary --model smollm2-135m --engine vllm \
        --probe mbpp:validation --max-rounds 1 --probe-concurrency 8 --runs 1 --aa 0
    .venv/bin/python -m benchmarks.serving.broken_canary --model smollm2-135m --engine vllm \
        --probe mbpp:validation --max-rounds 1 --probe-concurrency 8 --runs 0 --aa 1 --temperature 0 \
        --max-duration 2400 --suffix _aa_greedy

The champion is served by `coding-framework serve`; each run is `coding-framework deploy DIR --strategy
canary --steps 50,100 --probe SRC --probe-rate R --on-inconclusive rollback --wait`, where DIR is a model
directory of the champion's architecture with freshly initialised weights (seed = run number). While it
runs, a client thread sends chat requests (no tests anywhere) and records which version answered. The A/A
runs last (its promotion makes the copy the champion). Results:
``benchmarks/results/broken_canary_<model><suffix>.json``: per run the verdict, its reason, the probe grades
per arm (with unparseable, crashed, timed out and probe errors), the decisions and the chat answers per
version.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from benchmarks.harness import RESULTS, ROOT, LoadMonitor, write_result
from benchmarks.serving.served import Served
from coding_framework.models import resolve_model

CLI = [sys.executable, "-m", "coding_framework.cli"]
_WEIGHTS = ("model.safetensors", "config.json", "generation_config.json")


def random_weights(model_dir: Path, out: Path, seed: int) -> Path:
    """``model_dir``'s architecture and tokenizer with freshly initialised weights."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for f in model_dir.iterdir():
        if f.is_file() and f.name not in _WEIGHTS:
            shutil.copy2(f, out / f.name)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(model_dir), dtype=torch.float32)
    model.save_pretrained(out)
    return out


def copy_of(model_dir: Path, out: Path) -> Path:
    """The same files under another directory name: another version id, the same weights (an A/A)."""
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(model_dir, out, copy_function=os.link)
    return out


class ChatClients(threading.Thread):
    """Chat-only traffic: a request every ``1 / rate`` seconds, each its own session; counts who answered."""

    def __init__(self, url: str, rate: float) -> None:
        super().__init__(daemon=True)
        self.url, self.rate = url, rate
        self.answered: Counter[str] = Counter()
        self.failed = 0
        self._halt = threading.Event()

    def run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=300) as client:
            i = 0
            while not self._halt.wait(1 / self.rate):
                i += 1
                body = {"messages": [{"role": "user", "content": "Write a Python function that reverses a "
                                      "string."}], "max_tokens": 48, "session_id": f"chat-{time.time()}-{i}"}
                try:
                    answer = client.post("/v1/chat/completions", json=body)
                    answer.raise_for_status()
                    self.answered[answer.json()["model"]] += 1
                except (httpx.HTTPError, KeyError, ValueError):
                    self.failed += 1

    def stop(self) -> dict[str, Any]:
        self._halt.set()
        self.join()
        return {"answered_by": dict(self.answered), "failed": self.failed}


def deploy(url: str, spec: Path, probe: str, args: argparse.Namespace) -> dict[str, Any]:
    command = [*CLI, "deploy", str(spec), "--server", url, "--strategy", "canary", "--steps", args.steps,
               "--probe", probe, "--probe-rate", str(args.probe_rate), "--max-duration",
               str(args.max_duration), "--on-inconclusive", "rollback", "--wait", "--timeout",
               str(args.max_duration + 600)]
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=False)
    if not done.stdout.strip():
        raise SystemExit(f"deploy printed nothing (exit {done.returncode})")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _arm(arm: dict[str, Any]) -> dict[str, Any]:
    keys = ("probe_graded", "probe_passed", "probe_unparseable", "probe_crashed", "probe_timed_out",
            "probe_errors", "requests", "errors")
    return {k: arm[k] for k in keys}


def one_run(url: str, spec: Path, kind: str, probe: str, args: argparse.Namespace) -> dict[str, Any]:
    clients = ChatClients(url, args.chat_rate)
    clients.start()
    began = time.perf_counter()
    status = deploy(url, spec, probe, args)
    row = {"candidate": kind, "probe": probe, "status": status["status"], "reason": status["reason"],
           "seconds": round(time.perf_counter() - began, 1),
           "probe_grades": {"candidate": status["arms"][status["candidate_version"]]["probe_graded"],
                            "champion": status["arms"][status["champion_version"]]["probe_graded"],
                            "pairs": sum(status.get("probe_pairs", {}).values())},
           "arms": {"champion": _arm(status["arms"][status["champion_version"]]),
                    "candidate": _arm(status["arms"][status["candidate_version"]])},
           "test": status["test"], "guardrails": status.get("guardrails", {}),
           "decisions": [f"{d['action']}: {d['reason']}" for d in status["decisions"]],
           "chat": clients.stop()}
    print(json.dumps({k: row[k] for k in ("candidate", "status", "reason", "seconds", "probe_grades")}),
          flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="embedded", help="the champion (embedded, smollm2-135m, a dir)")
    parser.add_argument("--engine", choices=("local", "vllm"), default="local")
    parser.add_argument("--probe", default="builtin", help="probe source (benchmark or NAME:SPLIT)")
    parser.add_argument("--aa-probe", help="the A/A's probe source (default: --probe); at a champion pass "
                        "rate of 0 an A/A can only end inconclusive")
    parser.add_argument("--max-rounds", type=int, default=2, help="drafts per /v1/solve (probes too)")
    parser.add_argument("--temperature", type=float, default=0.2, help="the server's sampling temperature")
    parser.add_argument("--probe-rate", type=float, default=4.0)
    parser.add_argument("--steps", default="50,100")
    parser.add_argument("--runs", type=int, default=5, help="random-weights candidates, one after another")
    parser.add_argument("--aa", type=int, default=1, help="A/A rollouts after them")
    parser.add_argument("--probe-concurrency", type=int, default=4, help="probe pairs in flight at once")
    parser.add_argument("--chat-rate", type=float, default=0.5, help="chat requests per second")
    parser.add_argument("--max-duration", type=float, default=1800.0)
    parser.add_argument("--port", type=int, default=8791)
    parser.add_argument("--suffix", default="", help="added to the result file's name (e.g. _aa_greedy)")
    parser.add_argument("--work-dir", type=Path, default=ROOT / "runs" / "broken_canary")
    args = parser.parse_args()
    champion = resolve_model(args.model)
    assert champion.model_dir is not None
    work = args.work_dir / champion.name
    work.mkdir(parents=True, exist_ok=True)
    prefix = "vllm:" if args.engine == "vllm" else ""
    config: dict[str, Any] = {
        "model": f"{prefix}{args.model}", "model_cache": str(work / "cache"),
        "mlflow_uri": f"sqlite:///{work / 'mlflow.db'}", "pool": {"request_timeout_s": 600},
        "persist_state": False,  # else the port's state file would restore an earlier run's champion
        "rollout": {"drain_s": 1.0, "probe_concurrency": args.probe_concurrency},
        "solve": {"max_rounds": args.max_rounds, "temperature": args.temperature}}
    if args.engine == "vllm":
        config["vllm"] = {"dtype": "bfloat16", "max_num_seqs": 16, "max_model_len": 2048}
    runs = []
    started = time.perf_counter()
    with LoadMonitor() as load, Served(config, args.port) as served:
        for i in range(args.runs):
            spec = random_weights(champion.model_dir, work / f"random-{i}", seed=i)
            runs.append(one_run(served.url, Path(f"{prefix}{spec}"), f"random weights, seed {i}", args.probe,
                                args))
        for i in range(args.aa):
            spec = copy_of(champion.model_dir, work / f"aa-copy-{i}")
            runs.append(one_run(served.url, Path(f"{prefix}{spec}"), "A/A: a copy of the champion",
                                args.aa_probe or args.probe, args))
    figures = {
        "champion": champion.id, "engine": args.engine, "probe": args.probe,
        "probe_rate_per_s": args.probe_rate,
        "probe_concurrency": args.probe_concurrency, "aa_probe": args.aa_probe or args.probe,
        "solve_max_rounds": args.max_rounds, "temperature": args.temperature,
        "steps": args.steps, "chat_rate_per_s": args.chat_rate, "max_duration_s": args.max_duration,
        "on_inconclusive": "rollback", "runs": runs,
        "random_weights": {"runs": args.runs,
                           "rolled_back": sum(r["status"] == "rolled_back" for r in runs[:args.runs]),
                           "promoted": sum(r["status"] == "promoted" for r in runs[:args.runs])},
        "aa": {"runs": args.aa, "promoted": sum(r["status"] == "promoted" for r in runs[args.runs:])},
        "wall_s": round(time.perf_counter() - started, 1),
    }
    print(json.dumps({k: figures[k] for k in ("random_weights", "aa", "wall_s")}))
    name = f"broken_canary_{champion.name}{args.suffix}.json"
    write_result(RESULTS / name, figures, load, model_dir=champion.model_dir)


if __name__ == "__main__":
    main()
