"""The update step on a GPU in fp32, bf16 autocast and bf16 with gradient checkpointing: seconds per step and
peak memory, as ``optim.precision`` and ``optim.gradient_checkpointing`` run it.

What runs is the trainer's update arithmetic on a quickstart-shaped batch (12 prompts x 8 episodes, ~170
prompt tokens, up to 2 x 128 response tokens; 32 rows per micro-batch): ``training.batch.score`` (the
shared-prompt KV-cache pass, or with checkpointing its full-row pass), a policy-gradient loss over the
generated tokens, backward, gradient clipping and AdamW, with ``PolicyUpdate``'s autocast and train-mode
switch. ``batch.py`` is loaded as a file of its own: a GPU machine without this package's dependencies
(Ray, LangGraph, MLflow) runs it with torch and transformers alone.

Models: ``embedded`` (the shipped reference build, the quickstart's 4.5M model) and ``qwen2-0.5b`` /
``qwen2-1.5b`` (Qwen2.5's shapes, randomly initialised: no weights can be downloaded; speed and memory do
not depend on the values).

On the GPU machine (figures to ``--raw``):
    python3 -m benchmarks.training.gpu_precision --raw $OUT/gpu_precision_raw.json
Filed here afterwards (adds the record of the machine that files it; the GPU machine's own record, with its
command, GPU, driver and torch, goes in ``measured_on`` through ``write_result(measured_on=...)``):
    .venv/bin/python -m benchmarks.training.gpu_precision --file gpu_precision_raw.json
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# Not benchmarks.harness's: the measuring half runs on a GPU machine that has torch but not the package.
ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results" / "gpu_precision.json"
MODES = {"fp32": (False, False), "bf16": (True, False), "bf16+gc": (True, True), "fp32+gc": (False, True)}
QWEN2 = {  # Qwen2.5 0.5B / 1.5B shapes
    "qwen2-0.5b": {"hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
                   "num_attention_heads": 14, "num_key_value_heads": 2},
    "qwen2-1.5b": {"hidden_size": 1536, "intermediate_size": 8960, "num_hidden_layers": 28,
                   "num_attention_heads": 12, "num_key_value_heads": 2},
}


def _args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="*", default=["embedded", "qwen2-0.5b", "qwen2-1.5b"])
    ap.add_argument("--modes", nargs="*", choices=list(MODES), default=["fp32", "bf16", "bf16+gc"])
    ap.add_argument("--steps", type=int, default=4, help="timed steps per mode (after one warm-up step)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--micro-batch-size", type=int, default=32)
    ap.add_argument("--raw", type=Path, help="measure here and write the figures to this JSON")
    ap.add_argument("--file", type=Path, help="file a --raw JSON under benchmarks/results")
    ap.add_argument("--out", type=Path, default=RESULTS)
    return ap.parse_args(argv)


def _batch_module() -> Any:
    path = ROOT / "src" / "coding_framework" / "training" / "batch.py"
    spec = importlib.util.spec_from_file_location("trainer_batch", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _model(name: str, device: Any) -> Any:
    import torch
    from transformers import AutoModelForCausalLM, Qwen2Config

    if name == "embedded":
        return AutoModelForCausalLM.from_pretrained(
            ROOT / "src" / "coding_framework" / "embedded" / "reference", dtype=torch.float32).to(device)
    config = Qwen2Config(vocab_size=151_936, max_position_embeddings=4096, tie_word_embeddings=True,
                         **QWEN2[name])
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(config, dtype=torch.float32).to(device)


def _quickstart_batch(batch_mod: Any, vocab: int, device: Any) -> Any:
    import torch

    gen = torch.Generator().manual_seed(0)
    prompts = [torch.randint(10, vocab, (170,), generator=gen) for _ in range(12)]
    rows = 12 * 8
    lengths = torch.randint(60, 257, (rows,), generator=gen)
    width = int(lengths.max())
    ids = torch.randint(10, vocab, (rows, width), generator=gen)
    mask = (torch.arange(width) < lengths.unsqueeze(-1)).float()
    return batch_mod.TrajectoryBatch(
        prompts=[p.to(device) for p in prompts], prompt_index=torch.arange(rows).div(8, rounding_mode="floor")
        .to(device), response_ids=ids.to(device), response_len=lengths.to(device),
        response_mask=mask.to(device), old_logprobs=torch.zeros(rows, width, device=device),
        rewards=torch.randn(rows, generator=gen).to(device), group_ids=[str(i // 8) for i in range(rows)])


@contextlib.contextmanager
def _train_mode(model: Any, on: bool) -> Iterator[None]:
    if on:
        model.train()
    try:
        yield
    finally:
        model.eval()


def _mode(batch_mod: Any, name: str, mode: str, steps: int, mbs: int, device: Any) -> dict[str, Any]:
    import torch

    bf16, gc = MODES[mode]
    torch.cuda.empty_cache() if device.type == "cuda" else None
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    model = _model(name, device).eval()
    if gc:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    params = list(model.parameters())
    optimizer = torch.optim.AdamW(params, lr=1e-6)
    batch = _quickstart_batch(batch_mod, model.config.vocab_size, device)
    adv = torch.randn(batch.response_mask.shape, generator=torch.Generator().manual_seed(1)).to(device)
    autocast = (lambda: torch.autocast(device.type, dtype=torch.bfloat16)) if bf16 else contextlib.nullcontext
    times, first_logprobs = [], None
    order = list(range(len(batch)))
    for step in range(steps + 1):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        started = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        tokens = float(batch.response_mask.sum())
        for i in range(0, len(order), mbs):
            rows = order[i : i + mbs]
            sub = batch.select(rows)
            with autocast(), _train_mode(model, gc):
                scored = batch_mod.score(model, sub, entropy=True, checkpointed=gc)
            w = sub.response_mask.shape[1]
            loss = -(scored.logprobs * adv[rows, :w] * sub.response_mask).sum() / tokens
            loss.backward()
            if step == 0 and i == 0:
                first_logprobs = scored.logprobs.detach().float().cpu()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        if step:
            times.append(time.perf_counter() - started)
    peak = torch.cuda.max_memory_allocated(device) / 2**20 if device.type == "cuda" else None
    result = {"model": name, "mode": mode, "parameters": sum(p.numel() for p in params),
              "seconds_per_step": statistics.median(times), "seconds_all": times, "peak_mib": peak,
              "tokens_scored": int(batch.response_mask.sum())}
    del model, optimizer
    return result | {"_first_logprobs": first_logprobs}


def measure(args: argparse.Namespace) -> dict[str, Any]:
    import torch
    import transformers

    load_before = os.getloadavg()[0]
    device = torch.device(args.device)
    batch_mod = _batch_module()
    runs: list[dict[str, Any]] = []
    for name in args.models:
        reference = None
        for mode in args.modes:
            try:
                run = _mode(batch_mod, name, mode, args.steps, args.micro_batch_size, device)
            except torch.OutOfMemoryError as exc:  # itself a result: this mode does not fit
                runs.append({"model": name, "mode": mode, "oom": str(exc).split(".")[0]})
                print(json.dumps(runs[-1]), flush=True)
                torch.cuda.empty_cache()
                continue
            logprobs = run.pop("_first_logprobs")
            if reference is None:
                reference = logprobs
            diff = float((logprobs - reference).abs().max())
            run["first_micro_batch_logprob_abs_diff_vs_first_mode"] = diff
            print(json.dumps(run), flush=True)
            runs.append(run)
    for run in runs:  # against the first mode (fp32) of the same model, where both ran
        base = next(r for r in runs if r["model"] == run["model"] and r["mode"] == args.modes[0])
        if "oom" in run or "oom" in base:
            continue
        run["time_ratio_vs_first_mode"] = run["seconds_per_step"] / base["seconds_per_step"]
        if run["peak_mib"] is not None:
            run["peak_ratio_vs_first_mode"] = run["peak_mib"] / base["peak_mib"]
    return {
        "modes": args.modes, "steps": args.steps, "micro_batch_size": args.micro_batch_size,
        "measured_on": {  # the GPU machine's record; write_result's MEASURED_ON_KEYS and more
            "command": " ".join(["python3", "-m", "benchmarks.training.gpu_precision", *sys.argv[1:]]),
            "device": torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor(),
            "driver": _driver() if device.type == "cuda" else None, "torch": torch.__version__,
            "cuda": torch.version.cuda, "transformers": transformers.__version__,
            "python": platform.python_version(), "cpu": platform.processor(), "cores": os.cpu_count(),
            "load_avg": {"before": load_before, "after": os.getloadavg()[0]},
        },
        "runs": runs,
    }


def _driver() -> str | None:
    """The NVIDIA driver version, as ``nvidia-smi`` reports it (None where it cannot be run)."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out.splitlines()[0].strip() if out.strip() else None


def main(argv: list[str] | None = None) -> None:
    args = _args(argv)
    if args.file is not None:
        from benchmarks.harness import write_result

        figures = json.loads(args.file.read_text())
        measured_on = figures.pop("measured_on")  # the GPU's record; this machine's is the filing record
        write_result(args.out, {"filed_from": str(args.file), **figures}, measured_on=measured_on)
        print(f"filed {args.out}")
        return
    figures = measure(args)
    if args.raw is not None:
        args.raw.parent.mkdir(parents=True, exist_ok=True)
        args.raw.write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
