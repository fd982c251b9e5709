"""Our grader against EvalPlus's own evaluator on HumanEval+ and MBPP+: per-sample agreement and throughput.

Anchor: ``evalplus.evaluate`` (EvalPlus 0.3.1, installed in its own venv, default ``/work/venvs/evalplus``),
fed the same release-format files through its ``HUMANEVAL_OVERRIDE_PATH`` / ``MBPP_OVERRIDE_PATH`` and
the same samples. HumanEval+ is built from the real HumanEval (``benchmarks/grading/evalplus_fixture.py``: its
base inputs, plus seeded mutations), MBPP+ from sanitized MBPP the same way (or a given MbppPlus file).
Every task gets a correct (canonical), wrong, crashing and base-only sample; ``--timeouts`` tasks also a
timing-out one. Both sides run with
their ground truth already cached (one untimed warm-up each), with ``--parallel``/``--workers`` equal and
isolation on (bwrap) for ours; the timed figure is each command's whole wall time. Results go to
benchmarks/results/evalplus_agreement.json with the machine record, which names the evalplus version
installed in the anchor's venv.

    python -m benchmarks.grading.evalplus_agreement --tasks 30 --plus 40 --workers 2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.grading.evalplus_fixture import build, build_mbpp
from benchmarks.harness import RESULTS, ROOT, LoadMonitor, anchor_versions, write_result

OUT = RESULTS / "evalplus_agreement.json"
_OVERRIDE = {"humaneval": "HUMANEVAL_OVERRIDE_PATH", "mbpp": "MBPP_OVERRIDE_PATH"}


def samples_for(records: list[dict], timeouts: int) -> list[dict]:
    """correct / wrong / crash / base-only for every task, timeout for the first ``timeouts`` tasks."""
    out = []
    for i, r in enumerate(records):
        e, tid = r["entry_point"], r["task_id"]
        base = "".join(
            f"    if json.loads(json.dumps(list(a))) == {inp!r}:\n        return _ref(*a)\n"
            for inp in r["base_input"]
        )
        reference = (r["prompt"] + r["canonical_solution"]).replace(f"def {e}(", "def _ref(")
        out += [
            {"task_id": tid, "solution": r["prompt"] + r["canonical_solution"], "kind": "correct"},
            {"task_id": tid, "solution": f"def {e}(*a):\n    return None\n", "kind": "wrong"},
            {"task_id": tid, "solution": f"def {e}(*a):\n    return [1][2]\n", "kind": "crash"},
            {"task_id": tid, "solution": f"import json\n{reference}\ndef {e}(*a):\n{base}    return None\n",
             "kind": "base_only"},
        ]  # fmt: skip
        if i < timeouts:
            out.append(
                {
                    "task_id": tid,
                    "solution": f"def {e}(*a):\n    while True:\n        pass\n",
                    "kind": "timeout",
                }
            )
    return out


def run_evalplus(venv: Path, dataset: str, data: Path, samples: Path, workers: int) -> tuple[dict, float]:
    env = {**os.environ, _OVERRIDE[dataset]: str(data)}
    result_path = samples.with_name(samples.stem + "_eval_results.json")
    result_path.unlink(missing_ok=True)  # else it asks on stdin whether to overwrite
    cmd = [str(venv / "bin" / "evalplus.evaluate"), "--dataset", dataset, "--samples", str(samples),
           "--parallel", str(workers), "--i-just-wanna-run"]  # fmt: skip
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    result = json.loads(result_path.read_text())
    return result, elapsed


def run_ours(
    benchmark: str, data: Path, samples: Path, workers: int, results: Path
) -> tuple[list, dict, float]:
    cmd = [sys.executable, "-m", "coding_framework.cli", "evaluate", "--benchmark", benchmark]
    cmd += ["--data", str(data), "--samples", str(samples), "--results", str(results)]
    cmd += ["--workers", str(workers)]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    rows = [json.loads(x) for x in results.read_text().splitlines()]
    return rows, json.loads(proc.stdout.splitlines()[-1]), elapsed


def compare(samples: list[dict], ours: list[dict], theirs: dict) -> dict:
    """Per-sample verdicts side by side: base and plus, EvalPlus's status strings vs our booleans."""
    by_task: dict[str, list] = {}
    for r in theirs["eval"].values():
        by_task.setdefault(r[0]["task_id"], []).extend(r)
    seen: dict[str, int] = {}
    disagreements, counts = [], {}
    for s, row in zip(samples, ours, strict=True):
        k = seen.get(s["task_id"], 0)
        seen[s["task_id"]] = k + 1
        ref = by_task[s["task_id"]][k]
        base_ok, plus_ok = ref["base_status"] == "pass", ref["base_status"] == ref["plus_status"] == "pass"
        counts[s["kind"]] = counts.get(s["kind"], 0) + 1
        if (base_ok, plus_ok) != (row["base_passed"], row["passed"]):
            disagreements.append({"task_id": s["task_id"], "kind": s["kind"], "evalplus": [ref["base_status"],
                                  ref["plus_status"]], "ours": [row["base_passed"], row["passed"]],
                                  "our_result": row["result"]})  # fmt: skip
    return {"samples": len(samples), "by_kind": counts, "disagreements": disagreements}


def one_set(name: str, dataset: str, records: list[dict], args: argparse.Namespace, tmp: Path) -> dict:
    data = tmp / f"{name}.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records))
    samples = samples_for(records, args.timeouts)
    sample_file = tmp / f"{name}_samples.jsonl"
    sample_file.write_text("".join(json.dumps(s) + "\n" for s in samples))
    run_evalplus(args.evalplus_venv, dataset, data, sample_file, args.workers)  # warm-up: ground truth
    run_ours(name, data, sample_file, args.workers, tmp / "warm.jsonl")
    theirs, t_theirs = run_evalplus(args.evalplus_venv, dataset, data, sample_file, args.workers)
    rows, summary, t_ours = run_ours(name, data, sample_file, args.workers, tmp / f"{name}_ours.jsonl")
    inputs = sum(len(r["base_input"]) + len(r["plus_input"]) for r in records)
    return {
        "tasks": len(records),
        "test_inputs": inputs,
        "ours_pass_at_1": summary,
        "evalplus_s": round(t_theirs, 2),
        "ours_s": round(t_ours, 2),
        "throughput_ratio_ours_over_evalplus": round(t_theirs / t_ours, 2),
        **compare(samples, rows, theirs),
    }



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=30)
    parser.add_argument("--plus", type=int, default=40)
    parser.add_argument("--timeouts", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--evalplus-venv", type=Path, default=Path("/work/venvs/evalplus"))
    parser.add_argument(
        "--humaneval", type=Path, default=Path("/work/shared/data/humaneval/HumanEval.jsonl.gz")
    )
    parser.add_argument("--mbpp", type=Path, default=Path("/work/shared/data/mbpp/sanitized-mbpp.json"))
    parser.add_argument("--mbppplus", type=Path, help="An MbppPlus release-format file to use instead.")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    with LoadMonitor() as load, tempfile.TemporaryDirectory(prefix="cf-evalplus-") as tmp:
        humaneval = build(args.humaneval, args.tasks, args.plus)
        mbpp = (
            [json.loads(x) for x in args.mbppplus.read_text().splitlines()]
            if args.mbppplus
            else build_mbpp(args.mbpp, args.tasks, args.plus)
        )
        sets = {
            "humanevalplus": one_set("humanevalplus", "humaneval", humaneval, args, Path(tmp)),
            "mbppplus": one_set("mbppplus", "mbpp", mbpp, args, Path(tmp)),
        }
    report = {
        "anchor": "evalplus 0.3.1 evalplus.evaluate (--parallel = our --workers), warm ground-truth caches",
        "workers": args.workers,
        "sets": sets,
    }
    anchor = anchor_versions(args.evalplus_venv / "bin" / "python", "evalplus")
    write_result(args.out, report, load, extra_packages=anchor)
    print(json.dumps({k: {m: v[m] for m in ("throughput_ratio_ours_over_evalplus", "disagreements")}
                      for k, v in sets.items()}))  # fmt: skip


if __name__ == "__main__":
    main()
