"""The warm start's memory: `smollm2_grpo`'s supervised warm start (SmolLM2-135M in fp32, one LoRA adapter of
rank 16, micro-batches of 8) with the output layer run only at the answer's positions (ours,
``training.sft``) against the usual causal-LM loss over every position's logits (the anchor: what
``model(input_ids, labels=labels).loss`` computes, the warm start's loss before).

Reproduce (from the repo root; about 10 minutes on 2 cores):

    CODING_FRAMEWORK_DATA_DIR=../shared/data .venv/bin/python -m benchmarks.training.warm_start_memory

Each method runs in its own process on the same examples (the reference programs of the first
``--problems`` MBPP-train problems as answers to the Generator's request, the recipe's form), one epoch of
``sft.fit`` from the same weights and adapter. Figures: the peak resident memory the fit added over the
loaded model (``VmHWM``, reset after the load, less the resident size before the fit); what the process
still held over the loaded model after the fit, and after ``sft.release_freed_memory`` (which the warm start
calls) gave the freed heap back; each epoch's mean loss (the two agree: the same function); and seconds a
batch. Each method runs ``--repeats`` times, alternating; a cell keeps its largest peak and its fastest
seconds (indicative only when other jobs share the CPU: see the load).
Results: benchmarks/results/warm_start_memory.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import torch

from benchmarks.harness import RESULTS, LoadMonitor, write_result
from coding_framework.config.policies import PoliciesConfig
from coding_framework.config.warm_start import GeneratorWarmStartConfig
from coding_framework.llm.adapters import RoleAdapters
from coding_framework.models import resolve_model
from coding_framework.problems.sources import load_source, parse_source
from coding_framework.training import sft
from coding_framework.training.generator_sft import sft_rows

RESULT = RESULTS / "warm_start_memory.json"
MODEL = "smollm2-135m"
POLICIES = PoliciesConfig(mode="shared_lora", roles=["generator"], rank=16, alpha=32)
METHODS = ("answer_positions", "full_logits")


def _full_logits(model: torch.nn.Module, ids: torch.Tensor, labels: torch.Tensor, attention: torch.Tensor
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """Every position's logits and label, IGNORE included: cross-entropy skips those (its default
    ignore_index is IGNORE), as a causal LM's own loss does."""
    logits = model(input_ids=ids, attention_mask=attention).logits[:, :-1].float()
    return logits.reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1)


def _status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def measure(method: str, problems: int, threads: int) -> dict[str, Any]:
    """One method's fit, in this process (the parent runs each in its own)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(threads)
    model_dir = resolve_model(MODEL).model_dir
    assert model_dir is not None  # smollm2-135m is a directory on disk
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    adapters = RoleAdapters(model, POLICIES, seed=0)
    adapter = adapters.names[0]
    settings = GeneratorWarmStartConfig()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    rows = sft_rows(tokenizer, load_source(parse_source("mbpp:train"))[:problems], settings)
    if method == "full_logits":
        sft._answer_logits = _full_logits
    Path("/proc/self/clear_refs").write_text("5")  # the peak (VmHWM) restarts from here, not the load's
    before = _status_mb("VmRSS")
    started = time.perf_counter()
    with adapters.using(adapter):
        losses = sft.fit(model, tokenizer, rows, epochs=1, lr=settings.lr, micro_batch_size=8, seed=0,
                         parameters=adapters.parameters(adapter))
    seconds = time.perf_counter() - started
    peak, held = _status_mb("VmHWM"), _status_mb("VmRSS")
    sft.release_freed_memory()
    trimmed = _status_mb("VmRSS")
    batches = -(-len(rows) // 8)
    return {"examples": len(rows), "batches": batches, "rss_before_mb": round(before, 1),
            "peak_rss_mb": round(peak, 1), "peak_added_mb": round(peak - before, 1), "loss": losses[0],
            "held_after_fit_mb": round(held - before, 1), "held_after_release_mb": round(trimmed - before, 1),
            "seconds_per_batch": round(seconds / batches, 3),
            "longest_example_tokens": max(len(ids) for ids, _ in rows)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2, help="runs of each method (the fastest is kept)")
    parser.add_argument("--method", choices=METHODS, help=argparse.SUPPRESS)  # the child's own run
    args = parser.parse_args()
    if args.method:
        print(json.dumps(measure(args.method, args.problems, args.threads)))
        return
    runs: dict[str, list[dict[str, Any]]] = {method: [] for method in METHODS}
    with LoadMonitor() as load:
        for _ in range(args.repeats):  # alternating, so neither method always runs first on a cold machine
            for method in METHODS:
                child = ["-m", "benchmarks.training.warm_start_memory", "--method", method,
                         "--problems", str(args.problems), "--threads", str(args.threads)]
                out = subprocess.run([sys.executable, *child], capture_output=True, text=True, check=True)
                runs[method].append(json.loads(out.stdout.strip().splitlines()[-1]))
                print(method, runs[method][-1], flush=True)
    cells = {method: {**max(cell, key=lambda c: c["peak_added_mb"]),
                      "seconds_per_batch": min(c["seconds_per_batch"] for c in cell)}
             for method, cell in runs.items()}
    ours, anchor = cells["answer_positions"], cells["full_logits"]
    figures = {
        "model": MODEL, "micro_batch_size": 8, "lora_rank": POLICIES.rank,
        "methods": cells, "repeats": runs,
        "peak_added_ratio_vs_anchor": round(ours["peak_added_mb"] / anchor["peak_added_mb"], 3),
        "loss_difference": abs(ours["loss"] - anchor["loss"]),
        "held_after_release_ratio": round(ours["held_after_release_mb"] / ours["held_after_fit_mb"], 3),
        "seconds_ratio_vs_anchor": round(ours["seconds_per_batch"] / anchor["seconds_per_batch"], 3),
    }
    write_result(RESULT, figures, load, model_dir=resolve_model(MODEL).model_dir)
    print(f"wrote {RESULT}")


if __name__ == "__main__":
    main()
