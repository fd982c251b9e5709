"""bf16 autocast for the update on a CPU: one `smollm2_lora` update (24 rows, LoRA rank 16) timed in fp32 and
under bf16 autocast, and what bf16 does to the numbers the engine checks.

Reproduce (from the repo root; about 3 minutes on 2 cores):

    .venv/bin/python -m benchmarks.training.cpu_bf16_update

The batch: 4 HumanEval prompts in the model's chat template, 6 responses each (other problems' reference
programs, at most 160 tokens; rewards 1, 0, 0, 1, 0, 0 in each group, so every row carries gradient), the
recorded logprobs the fp32 trainer's own. Each precision starts from the same weights and adapter and runs
``--repeats`` updates (GRPO, one epoch, micro-batches of 8, as `smollm2_lora`); seconds is the fastest. fp32
is the anchor. Drift: the update's mismatch metrics against the recorded fp32 logprobs (in fp32 they are
exactly 0), and the largest change bf16 makes to the adapter's weights after one update, against fp32's own
change. Results: benchmarks/results/cpu_bf16_update.json, with the CPU's bf16 flags.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import torch

from benchmarks.harness import RESULTS, LoadMonitor, write_result
from coding_framework.config.kl import KLConfig
from coding_framework.config.policies import PoliciesConfig
from coding_framework.config.training import AlgoConfig, OptimConfig
from coding_framework.llm.adapters import RoleAdapters
from coding_framework.models import resolve_model
from coding_framework.problems import load_humaneval
from coding_framework.training.algos.algorithms import get_algorithm
from coding_framework.training.batch import TrajectoryBatch
from coding_framework.training.trajectory import CallSpan, Trajectory
from coding_framework.training.update import PolicyUpdate

RESULT = RESULTS / "cpu_bf16_update.json"
MODEL = "smollm2-135m"
POLICIES = PoliciesConfig(mode="shared_lora", roles=["generator"], rank=16, alpha=32)


def bf16_flags() -> list[str]:
    flags = Path("/proc/cpuinfo").read_text().split("flags")[1].splitlines()[0].split()
    return sorted(f for f in flags if "bf16" in f or f.startswith("amx"))


def _rows(tokenizer: Any) -> list[Trajectory]:
    problems = load_humaneval()
    rows = []
    for g in range(4):
        ask = f"Complete this Python function.\n```python\n{problems[g].prompt}```"
        messages = [{"role": "user", "content": ask}]
        prompt = list(tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
                                                    return_dict=False))
        for i in range(6):
            text = problems[10 + 6 * g + i].solutions[0]
            ids = tokenizer(text, add_special_tokens=False)["input_ids"][:160]
            span = CallSpan(turn=0, start=0, length=len(ids), text="", stop_reason="length",
                            policy_version="0")
            rows.append(Trajectory(prompt_ids=prompt, response_ids=ids, response_mask=[1] * len(ids),
                                   response_logprobs=[0.0] * len(ids), reward=float(i % 3 == 0),
                                   group_id=f"g{g}", calls=[span]))
    return rows


def _update(precision: str) -> tuple[PolicyUpdate, RoleAdapters]:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(resolve_model(MODEL).model_dir, dtype=torch.float32)
    adapters = RoleAdapters(model, POLICIES, seed=0)
    optim = OptimConfig(lr=2e-4, micro_batch_size=8, grad_clip=1.0, precision=precision)
    update = PolicyUpdate(model, get_algorithm("grpo"), AlgoConfig(), optim, KLConfig(), 10, seed=0,
                          params=adapters.parameters(adapters.names[0]))
    return update, adapters


def _adapter(adapters: RoleAdapters) -> torch.Tensor:
    return torch.cat([p.detach().flatten().clone() for p in adapters.parameters(adapters.names[0])])


def run(precision: str, batch: TrajectoryBatch, repeats: int) -> dict[str, Any]:
    seconds, metrics, delta = [], {}, torch.zeros(0)
    for _ in range(repeats):
        update, adapters = _update(precision)
        before = _adapter(adapters)
        start = time.perf_counter()
        metrics = update.step(batch, 0, measure_mismatch=True)
        seconds.append(time.perf_counter() - start)
        delta = _adapter(adapters) - before
    keys = ("mismatch/kl", "mismatch/ratio_mean", "mismatch/ratio_max", "seconds/forward_backward")
    return {"seconds": round(min(seconds), 2), "passes_s": [round(s, 2) for s in seconds],
            **{k: metrics[k] for k in keys}, "delta": delta}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULT)
    args = parser.parse_args()
    from transformers import AutoTokenizer

    torch.set_num_threads(args.threads)
    model = resolve_model(MODEL)
    tokenizer = AutoTokenizer.from_pretrained(model.model_dir)
    with LoadMonitor() as load:
        rows = _rows(tokenizer)
        recorder, _ = _update("fp32")
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        batch = TrajectoryBatch.from_trajectories(rows, pad)
        batch.old_logprobs = recorder.logprobs(batch)
        arms = {p: run(p, batch, args.repeats) for p in ("fp32", "bf16")}
    fp32_change = float(arms["fp32"]["delta"].abs().max())
    drift = float((arms["bf16"].pop("delta") - arms["fp32"].pop("delta")).abs().max())
    figures = {
        "model": MODEL, "model_id": model.id, "threads": args.threads, "cpu_bf16_flags": bf16_flags(),
        "rows": len(rows), "tokens": int(batch.response_mask.sum()), "arms": arms,
        "bf16_over_fp32_seconds": round(arms["bf16"]["seconds"] / arms["fp32"]["seconds"], 3),
        "adapter_change_fp32_max": fp32_change, "adapter_drift_bf16_max": drift,
    }
    print(write_result(args.out, figures, load, model_dir=model.model_dir))


if __name__ == "__main__":
    main()
