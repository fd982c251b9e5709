"""Decoding throughput with per-role LoRA adapters: one mixed-adapter batch against single-adapter batches
and against no adapters, measured in one run on the same engine, prompts and sampling settings.

Reproduce:  .venv/bin/python -m benchmarks.training.mixed_adapter_decoding --rows 32 --tokens 64 --repeats 3

The embedded model gets two LoRA adapters (`generator`, `reviewer`; rank 8 on every attention and MLP
Linear) with non-zero random B, so each adds real work and changes the tokens. Every case decodes the same
``rows`` generation prompts (built-in and synthetic problems) in one ``LocalEngine`` batch with the KV cache,
seeded sampling at temperature 1 and a fixed ``--tokens`` budget (EOS ignored: the budget is what is timed):

* ``base``: the engine without adapters (today's path);
* ``single``: every row through the `generator` adapter (one adapter selected, plain forward);
* ``mixed``: alternate rows through `generator` and `reviewer` (peft's mixed-adapter batch,
  ``adapter_names=``), the batch an LLM Reviewer and a Generator sharing one engine produce.

Cases interleave over ``--repeats`` rounds and each reports its median tokens/s. Results go to
``benchmarks/results/mixed_adapter_decoding.json`` (with the machine record and the embedded model's
sha256) and ``.png``.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import RESULTS, LoadMonitor, write_result

OUT = RESULTS / "mixed_adapter_decoding.json"
CASES = ("base", "single", "mixed")


def _args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=32, help="sequences decoded together")
    ap.add_argument("--tokens", type=int, default=64, help="new tokens per sequence")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rank", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, default=OUT)
    return ap.parse_args(argv)


def _engines(path: Path, rank: int) -> tuple[Any, Any]:
    """(plain engine, engine with two non-zero adapters), both on the model at ``path`` in fp32 on CPU."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from coding_framework.config.policies import PoliciesConfig
    from coding_framework.llm.adapters import RoleAdapters
    from coding_framework.llm.local import LocalEngine

    base = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(path)
    plain = LocalEngine(copy.deepcopy(base), tokenizer, device="cpu", max_batch_size=4096)
    adapted = LocalEngine(base, tokenizer, device="cpu", max_batch_size=4096)
    adapters = RoleAdapters(base, PoliciesConfig(mode="per_role_lora", rank=rank, alpha=2 * rank), seed=0)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name in adapters.names:
            for p in adapters.parameters(name):
                p.add_(torch.randn(p.shape, generator=gen) * 0.02)
    adapted.attach_adapters(adapters)
    return plain, adapted


def _prompts(tokenizer: Any, rows: int) -> list[list[int]]:
    from coding_framework.problems import builtin_problems, synthetic_split
    from coding_framework.problems.prompts import generation_messages

    problems = [*builtin_problems(), *synthetic_split(8, 0.25, 0)[0]]
    out = []
    for p in problems[:rows]:
        messages = generation_messages(p)
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        out.append(list(tokenizer(text, add_special_tokens=False)["input_ids"]))
    return out


def _decode(engine: Any, prompts: list[list[int]], roles: list[str | None], tokens: int) -> tuple[float, int]:
    """(seconds, generated tokens) for one batch of ``prompts``, row ``i`` calling as ``roles[i]``."""
    from coding_framework.llm.base import SamplingParams
    from coding_framework.llm.local import _Row
    from coding_framework.llm.sampling import row_seed

    eos = engine._eos_ids
    engine._eos_ids = frozenset({-1})  # time the full budget: no row stops early
    try:
        rows = [_Row(p, SamplingParams(max_new_tokens=tokens, temperature=1.0, role=r), row_seed(7, i))
                for i, (p, r) in enumerate(zip(prompts, roles, strict=True))]
        start = time.perf_counter()
        gens = engine._run_rows(rows)
        seconds = time.perf_counter() - start
    finally:
        engine._eos_ids = eos
    return seconds, sum(len(g.token_ids) for g in gens)



def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = _args(argv)
    import torch

    from coding_framework.embedded import ensure_embedded_model

    torch.set_num_threads(args.threads)
    path = ensure_embedded_model()
    plain, adapted = _engines(path, args.rank)
    prompts = _prompts(plain.tokenizer, args.rows)
    roles = {
        "base": (plain, [None] * len(prompts)),
        "single": (adapted, ["generator"] * len(prompts)),
        "mixed": (adapted, ["generator" if i % 2 == 0 else "reviewer" for i in range(len(prompts))]),
    }
    _decode(adapted, prompts[:2], ["generator", "reviewer"], 4)  # warm-up
    rates: dict[str, list[float]] = {c: [] for c in CASES}
    with LoadMonitor() as load:
        for _ in range(args.repeats):
            for case in CASES:
                engine, who = roles[case]
                seconds, n = _decode(engine, prompts, who, args.tokens)
                rates[case].append(n / seconds)
    result = {
        "threads": args.threads,
        "rows": len(prompts),
        "tokens_per_row": args.tokens,
        "lora_rank": args.rank,
        "tokens_per_s": {c: statistics.median(v) for c, v in rates.items()},
        "all_tokens_per_s": rates,
    }
    t = result["tokens_per_s"]
    result["mixed_over_single"] = t["mixed"] / t["single"]
    result["single_over_base"] = t["single"] / t["base"]
    write_result(args.out, result, load, model_dir=path)
    _plot(result, args.out.with_suffix(".png"))
    print(json.dumps(result))
    return result


def _plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.2))
    values = [result["tokens_per_s"][c] for c in CASES]
    ax.bar(["no adapters", "one adapter", "mixed (2 adapters)"], values, color=["#999", "#4c72b0", "#dd8452"])
    ax.set_ylabel("generated tokens / s")
    ax.set_title(f"{result['rows']} rows x {result['tokens_per_row']} tokens, LoRA r={result['lora_rank']}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
