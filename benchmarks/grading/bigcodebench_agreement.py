"""Our in-process tier against BigCodeBench's own harness (``bigcodebench.eval.untrusted_check``, 0.2.5).

Reproduce (from the repo root; the official package in its own venv, installed without its heavy extras):

    python3 -m venv /work/venvs/bigcodebench
    /work/venvs/bigcodebench/bin/pip install -r scripts/bigcodebench-env-requirements.txt
    /work/venvs/bigcodebench/bin/pip install --no-deps bigcodebench==0.2.5
    bash scripts/setup_bigcodebench_env.sh
    .venv/bin/python -m benchmarks.grading.bigcodebench_agreement [--repeat 4]

One run reports, on the 12-task fixture and the tasks that run the system's programs
(tests/sandbox/fixtures/bigcodebench_programs: echo, sort through the shell, ls found on PATH, date):
1. agreement: per sample, the official status (pass/fail/timeout) against ours mapped to it
   (``official_status``), and the failing test names, by category (correct, wrong, timeout, crash);
2. throughput: samples per second of each harness on the same samples, same workers and time limit, ours
   with isolation on and counting the start of its workers; the ratio ours / official;
3. the hack corpus (benchmarks/grading/adversarial_corpus.py) in BigCodeBench's format through our runner only
   (the official harness runs code on the host, unsandboxed): each attack's tier and verdict, and whether it
   was contained (host files, network, the host process it targets, leftover processes). The host holds
   the attacks' ground truth in a file and in its environment.
Results go to benchmarks/results/bigcodebench_agreement.json with the machine record, which names the
bigcodebench version installed in the official venv.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from benchmarks.grading.adversarial_corpus import ATTACKS, HOST_SECRET_ENV, TOY_ANSWERS, TOY_UNITTEST
from benchmarks.harness import RESULTS, ROOT, LoadMonitor, anchor_versions, cpu_name, write_result
from coding_framework.config import SandboxConfig
from coding_framework.config.inprocess import InProcessConfig
from coding_framework.grading import Grader
from coding_framework.problems import Problem, load_benchmark
from coding_framework.sandbox.inprocess import official_details, official_status

FIXTURE = ROOT / "tests" / "fixtures" / "bigcodebench"
PROGRAMS = ROOT / "tests" / "sandbox" / "fixtures" / "bigcodebench_programs"
OUT = RESULTS / "bigcodebench_agreement.json"

# Runs in the official venv: the official evaluate's path (check_correctness -> untrusted_check) with its
# limits (30 GiB address space and data, 10 MiB stack), a ProcessPoolExecutor of the same size as ours,
# and the per-task time limit set through its TIMEOUT_LIMIT (untrusted_check adds its own + 1 s).
OFFICIAL_DRIVER = r"""
import json, sys, time
from concurrent.futures import ProcessPoolExecutor
import bigcodebench.eval as ev
args = json.load(open(sys.argv[1]))
ev.TIMEOUT_LIMIT = args["timeout_s"] - 1.0

def check(job):
    stat, details = ev.untrusted_check(job["solution"], job["test"], "task_func", 30 * 1024, 30 * 1024, 10,
                                       min_time_limit=1, gt_time_limit=1)
    return stat, sorted(details)

if __name__ == "__main__":
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args["workers"]) as pool:
        out = list(pool.map(check, args["jobs"]))
    json.dump({"seconds": time.perf_counter() - start, "results": out}, open(sys.argv[2], "w"))
"""


def official(python: str, jobs: list[dict], workers: int, timeout_s: float) -> tuple[float, list]:
    with tempfile.TemporaryDirectory() as tmp:
        spec, out = Path(tmp) / "in.json", Path(tmp) / "out.json"
        spec.write_text(json.dumps({"jobs": jobs, "workers": workers, "timeout_s": timeout_s}))
        env = {**os.environ, "MPLBACKEND": "Agg"}
        subprocess.run([python, "-c", OFFICIAL_DRIVER, spec, out], check=True, cwd=tmp, env=env)
        report = json.loads(out.read_text())
    return report["seconds"], report["results"]


def ours(problems: dict[str, Problem], rows: list[dict], config: InProcessConfig) -> tuple[float, list]:
    start = time.perf_counter()
    with Grader(SandboxConfig(workers=1, inprocess=config)) as grader:
        results = grader.grade_many([(problems[r["task_id"]], r["solution"]) for r in rows])
    return time.perf_counter() - start, results


def agreement(rows: list[dict], theirs: list, mine: list) -> dict:
    by_category: dict[str, Counter] = {}
    disagreements = []
    for i, (row, (stat, failing), res) in enumerate(zip(rows, theirs, mine, strict=True)):
        ours_stat = official_status(res)
        same_tests = stat != "fail" or sorted(official_details(res)) == failing
        counts = by_category.setdefault(row["category"], Counter())
        counts["samples"] += 1
        counts["status_agree"] += ours_stat == stat
        counts["details_agree"] += same_tests
        if ours_stat != stat or not same_tests:
            disagreements.append(
                {
                    "index": i,
                    "task_id": row["task_id"],
                    "category": row["category"],
                    "official": stat,
                    "official_failing": failing,
                    "ours": ours_stat,
                    "ours_status": res.status,
                    "ours_failing": sorted(official_details(res)),
                    "summary": res.summary,
                }
            )
    return {"by_category": {k: dict(v) for k, v in by_category.items()}, "disagreements": disagreements}


TOY = Problem(
    task_id="BigCodeBench/toy-add",
    prompt="def add(a, b):\n",
    entry_point="add",
    test_code=TOY_UNITTEST,
    test_format="unittest",
    source="bigcodebench",
)


class Host:
    """What the attacks aim at on the host: a folder, a secret, a TCP port, a process; and the checks."""

    def __init__(self, root: Path) -> None:
        self.dir = root / "host"
        self.dir.mkdir()
        self.secret = self.dir / "answers.json"
        self.secret.write_text(json.dumps(TOY_ANSWERS))
        self.server = socket.create_server(("127.0.0.1", 0))
        self.hits: list[bytes] = []
        threading.Thread(target=self._answer, daemon=True).start()
        self.sentinel = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        self.before = self._pwned()

    def _answer(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            self.hits.append(conn.recv(100))
            conn.close()

    def _pwned(self) -> set[str]:
        return {
            str(p)
            for p in (self.dir / "pwned.txt", Path("/tmp/pwned.txt"), Path("/work/main/pwned.txt"))
            if p.exists()
        }

    def program(self, template: str) -> str:
        return (
            template.replace("{host_dir}", str(self.dir))
            .replace("{secret}", str(self.secret))
            .replace("{port}", str(self.server.getsockname()[1]))
            .replace("{sentinel}", str(self.sentinel.pid))
        )

    def breaches(self) -> list[str]:
        out = []
        if self._pwned() - self.before:
            out.append(f"wrote {sorted(self._pwned() - self.before)}")
        if self.hits:
            out.append(f"reached the host port ({len(self.hits)} connections)")
        if self.sentinel.poll() is not None:
            out.append("killed the host process")
        return out

    def close(self) -> None:
        self.sentinel.kill()
        self.server.close()


def hack_corpus(config: InProcessConfig) -> list[dict]:
    out = []
    os.environ[HOST_SECRET_ENV] = json.dumps(TOY_ANSWERS)  # before any worker starts
    with tempfile.TemporaryDirectory() as tmp, Grader(SandboxConfig(workers=1, inprocess=config)) as grader:
        host = Host(Path(tmp))
        try:
            for attack in ATTACKS:
                res = grader.grade(TOY, host.program(attack.program))
                breaches = host.breaches()
                out.append(
                    {
                        "attack": attack.name,
                        "category": attack.category,
                        "tier": res.tier,
                        "status": res.status,
                        "passed": res.passed,
                        "official_status": official_status(res),
                        "contained": not breaches,
                        "breaches": breaches,
                    }
                )
                if breaches:  # a breach would taint the next attack's checks; start it afresh
                    host.close()
                    host = Host(Path(tempfile.mkdtemp(dir=tmp)))
        finally:
            host.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    fixtures = (FIXTURE, PROGRAMS)
    parser.add_argument("--data", type=Path, nargs="+", default=[f / "BigCodeBench.jsonl" for f in fixtures])
    parser.add_argument("--samples", type=Path, nargs="+", default=[f / "samples.jsonl" for f in fixtures])
    parser.add_argument("--official-python", default="/work/venvs/bigcodebench/bin/python")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--timeout", type=float, default=3.0, help="Per-task time limit for both harnesses.")
    parser.add_argument("--repeat", type=int, default=1, help="Grade the samples this many times over.")
    parser.add_argument(
        "--memory-mb", type=int, default=30 * 1024, help="Ours; the official run uses 30 GiB."
    )
    parser.add_argument("--skip-corpus", action="store_true")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()

    problems = {p.task_id: p for data in args.data for p in load_benchmark("bigcodebench", data)}
    rows = [json.loads(line) for path in args.samples for line in path.read_text().splitlines()] * args.repeat
    jobs = [
        {
            "solution": problems[r["task_id"]].code_prompt + "\n    pass\n" + r["solution"],
            "test": problems[r["task_id"]].test_code,
        }
        for r in rows
    ]  # the official calibrated mode
    config = InProcessConfig(
        workers=args.workers, timeout_s=args.timeout, memory_mb=args.memory_mb, data_mb=args.memory_mb
    )
    with LoadMonitor() as load:
        their_s, theirs = official(args.official_python, jobs, args.workers, args.timeout)
        our_s, mine = ours(problems, rows, config)
        corpus = None if args.skip_corpus else hack_corpus(
            config.model_copy(update={"memory_mb": 4096, "data_mb": 4096}))
    report = {
        "samples": len(rows),
        "workers": args.workers,
        "timeout_s": args.timeout,
        "official": {"seconds": their_s, "samples_per_s": len(rows) / their_s},
        "ours": {
            "seconds": our_s,
            "samples_per_s": len(rows) / our_s,
            "isolation": mine[0].isolation,
            "tier": mine[0].tier,
        },
        "throughput_ratio": their_s / our_s,
        "agreement": agreement(rows, theirs, mine),
    }
    if corpus is not None:
        report["hack_corpus"] = corpus
    write_result(args.out, report, load, extra_packages=anchor_versions(args.official_python, "bigcodebench"))
    _print(report)


def _print(report: dict) -> None:
    print(
        f"{report['samples']} samples on {cpu_name()}, {report['workers']} workers, "
        f"{report['timeout_s']} s per task"
    )
    print(
        f"official {report['official']['samples_per_s']:.2f}/s, "
        f"ours {report['ours']['samples_per_s']:.2f}/s: {report['throughput_ratio']:.2f}x"
    )
    for category, counts in report["agreement"]["by_category"].items():
        print(
            f"  {category:8} {counts['status_agree']}/{counts['samples']} statuses agree, "
            f"{counts['details_agree']}/{counts['samples']} failing-test sets agree"
        )
    for d in report["agreement"]["disagreements"]:
        print(
            f"  DISAGREE {d['task_id']} ({d['category']}): official {d['official']} {d['official_failing']}, "
            f"ours {d['ours']} {d['ours_failing']} -- {d['summary'][:100]}"
        )
    for row in report.get("hack_corpus", []):
        print(
            f"  attack {row['attack']:28} tier={row['tier']} status={row['status']:8} "
            f"passed={row['passed']!s:5} contained={row['contained']} {'; '.join(row['breaches'])}"
        )


if __name__ == "__main__":
    main()
