"""The adversarial corpus in the CodeContests (stdin/stdout) and EvalPlus (calls) formats, through the grader.

Each attack of ``benchmarks/grading/adversarial_corpus.py`` defines ``add(a, b)``. For CodeContests it becomes
a whole program that reads ``a b`` from stdin and prints ``add(a, b)``; for HumanEval+ it is the solution of
a release-format task ``add`` with base and plus inputs. Every attack must fail, except those listed in
:data:`CORRECT_AS_STDIO`: in stdin/stdout form each test is a fresh run of the program, so an attack that
answers the first call correctly and only then misbehaves is a correct program there. The JSON records
each verdict with the trust tier it landed in, and the machine and load it ran under.

    python -m benchmarks.grading.contest_hack_corpus --workers 2
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from benchmarks.grading.adversarial_corpus import ATTACKS, TOY_PROMPT
from benchmarks.harness import RESULTS, LoadMonitor, write_result
from coding_framework.config.sandbox import ResourceLimits, SandboxConfig
from coding_framework.grading import Grader
from coding_framework.problems import Problem, load_benchmark
from coding_framework.problems._io import Record
from coding_framework.problems.codecontests import codecontests_problem

OUT = RESULTS / "contest_hack_corpus.json"
STDIO_MAIN = "\nimport sys as _sys\n_a, _b = map(int, _sys.stdin.read().split())\nprint(add(_a, _b))\n"
TESTS = [("1 2\n", "3\n"), ("-1 1\n", "0\n"), ("10 5\n", "15\n")]
CORRECT_AS_STDIO = {"exit_after_first_test"}  # returns a + b on its first call, and each run makes one


def stdio_problem() -> Problem:
    row = {
        "name": "0_A. Add",
        "description": "Read two integers a and b and print a + b.",
        "public_tests": {"input": [TESTS[0][0]], "output": [TESTS[0][1]]},
        "private_tests": {"input": [t[0] for t in TESTS[1:]], "output": [t[1] for t in TESTS[1:]]},
        "time_limit": {"seconds": 1, "nanos": 0},
        "memory_limit_bytes": 256 << 20,
    }
    return codecontests_problem(Record(row, "hack-corpus"))


def evalplus_problem(folder: Path) -> Problem:
    record = {
        "task_id": "HumanEval/add", "prompt": TOY_PROMPT, "entry_point": "add",
        "canonical_solution": "    return a + b\n", "base_input": [[1, 2], [-1, 1], [10, 5]],
        "plus_input": [[0, 0], [100, -3], [-7, -8], [2**40, 1]], "atol": 0, "contract": "", "test": "",
    }  # fmt: skip
    path = folder / "HumanEvalPlus.jsonl"
    path.write_text(json.dumps(record) + "\n")
    return load_benchmark("humanevalplus", path)[0]


@contextmanager
def host_env() -> Iterator[dict]:
    """What the attacks aim at: a host folder, a secret answers file, a TCP port, a sentinel process."""
    with tempfile.TemporaryDirectory(prefix="cf-hack-") as tmp:
        secret = Path(tmp) / "answers.json"
        secret.write_text(json.dumps({"1,2": 3, "-1,1": 0, "10,5": 15, "0,0": 0}))
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        sentinel = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        try:
            yield {"host_dir": tmp, "secret": str(secret), "port": server.getsockname()[1],
                   "sentinel": sentinel.pid, "sentinel_proc": sentinel}  # fmt: skip
        finally:
            sentinel.kill()
            sentinel.wait()
            server.close()


def fill(template: str, env: dict) -> str:
    for key in ("host_dir", "secret", "port", "sentinel"):
        template = template.replace("{" + key + "}", str(env[key]))
    return template


def run(workers: int) -> dict:
    config = SandboxConfig(workers=workers, limits=ResourceLimits(timeout_s=3.0, memory_mb=512))
    out: dict = {}
    with host_env() as env, tempfile.TemporaryDirectory() as tmp, Grader(config) as grader:
        problems = {"codecontests": stdio_problem(), "humanevalplus": evalplus_problem(Path(tmp))}
        for fmt, problem in problems.items():
            suffix = STDIO_MAIN if fmt == "codecontests" else ""
            items = [(problem, fill(a.program, env) + suffix) for a in ATTACKS]
            results = grader.grade_many(items)
            out[fmt] = [
                {"attack": a.name, "category": a.category, "passed": r.passed, "status": r.status,
                 "tier": r.tier, "result": r.summary[:160],
                 "correct_program": fmt == "codecontests" and a.name in CORRECT_AS_STDIO}
                for a, r in zip(ATTACKS, results, strict=True)
            ]  # fmt: skip
        out["sentinel_alive"] = env["sentinel_proc"].poll() is None
        out["host_dir_untouched"] = sorted(os.listdir(env["host_dir"])) == ["answers.json"]
    return out



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    with LoadMonitor() as load:
        report = run(args.workers)
    write_result(args.out, report, load)
    passed = {
        f: [r["attack"] for r in report[f] if r["passed"] and not r["correct_program"]]
        for f in ("codecontests", "humanevalplus")
    }
    print(json.dumps({"attacks": len(ATTACKS), "passed_attacks": passed,
                      "sentinel_alive": report["sentinel_alive"],
                      "host_dir_untouched": report["host_dir_untouched"]}))  # fmt: skip


if __name__ == "__main__":
    main()
