"""What the in-process tier lets a task reach: the adversarial corpus attack by attack, the host's network,
the system's programs, and a checkout or venv under the host's /tmp."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from benchmarks.grading.adversarial_corpus import ATTACKS, TOY_UNITTEST
from coding_framework.config.inprocess import InProcessConfig
from coding_framework.problems import load_benchmark
from coding_framework.sandbox.inprocess import InProcessSandbox, UnittestTask, official_status
from tests.sandbox.bigcodebench_env import needs_env, sample_rows
from tests.sandbox.test_adversarial import _program
from tests.sandbox.test_adversarial import host_env as corpus_host

PROGRAMS = Path(__file__).resolve().parent / "fixtures" / "bigcodebench_programs"
# No preloaded libraries: the toy tasks need none, and a worker then starts in a fraction of a second. The
# time limit leaves subprocess_shell room for its four `python` starts on a loaded machine.
CONFIG = InProcessConfig(timeout_s=6.0, workers=2, memory_mb=1024, data_mb=1024, file_size_mb=16, preload=[])

# The corpus in BigCodeBench's format, as this tier grades it. Only the five fake-equality attacks forge a
# pass (assertEqual and assertFalse run in the submission's process and trust its objects), and
# subprocess_shell computes the right sum in a child `python`, which this tier allows, as the official
# harness does. Every other attack fails; what each one gets is pinned so that a change shows (a set where
# the host's speed decides between two failing statuses).
CORPUS_OUTCOME: dict[str, str | set[str]] = {
    "sys_exit_at_import": "error",
    "sys_exit_in_call": "failed",
    "os_exit_at_import": "crashed",
    "os_exit_in_call": "crashed",
    "raise_systemexit": "failed",
    "raise_keyboardinterrupt": "error",
    "raise_generatorexit": "failed",
    "custom_baseexception": "failed",
    "exit_after_first_test": "crashed",
    "always_equal_object": "passed",
    "int_subclass_eq": "passed",
    "str_subclass_eq": "failed",
    "list_subclass_eq": "passed",
    "reflected_eq_subclass": "passed",
    "truthy_object": "passed",
    "patch_assertionerror": "failed",
    "patch_builtin_abs_len": "crashed",
    "patch_math_module": "failed",
    "patch_in_call": "failed",
    "patch_sys_modules_builtins": "failed",
    "stack_walk_set_results": "failed",
    "gc_walk_results": "error",
    "gc_search_test_source": "failed",
    "patch_wire_encoder": "failed",
    "print_passed": "failed",
    "write_all_fds": "error",  # its forged frame beside the report: a protocol error
    "fake_protocol_reply": "failed",
    "kill_parent": "crashed",  # it kills the zygote; the regrade's fresh zygote too
    "kill_everything": "crashed",
    "kill_host_sentinel": "failed",  # no such process in the sandbox's PID namespace
    "ignore_signals_spin": "timeout",
    "fork_child": "failed",
    "daemonize": "failed",
    "subprocess_shell": "passed",
    # its processes' reports interleave on the pipe (no whole frame, or more than one), or time runs out
    "fork_bomb": {"crashed", "error", "timeout"},
    # its thread's bytes land before the report, after it, or (killed first) not at all
    "thread_outlives_call": {"crashed", "error", "failed"},
    "ptrace_parent": "failed",  # the zygote is not dumpable
    "flood_stdout": "timeout",
    "flood_file": "failed",
    "memory_bomb": "failed",
    "huge_return_value": {"failed", "error", "timeout"},  # MemoryError in each test, or the clock first
    "deep_recursion": "failed",
    "infinite_loop": "timeout",
    "sleep_forever": "timeout",
    "read_dataset_files": {"failed", "timeout"},  # globs the whole file system, in time or not; finds nothing
    "read_secret_answers": "failed",
    "read_proc": "failed",
    "network_connect": "failed",
    "write_host_file": "failed",
    "env_secrets": "failed",
}
host_env = corpus_host  # the corpus's module fixture: a host folder, secret, TCP server and sentinel


@needs_env
@pytest.mark.slow
def test_the_corpus_outcome_attack_by_attack(host_env: dict) -> None:
    assert set(CORPUS_OUTCOME) == {a.name for a in ATTACKS}
    with InProcessSandbox(CONFIG) as pool:  # its workers start with the host's secret in the environment
        results = pool.run_many([UnittestTask(_program(a.program, host_env), TOY_UNITTEST) for a in ATTACKS])
    got = {a.name: r.status for a, r in zip(ATTACKS, results, strict=True)}
    wrong = {
        name: (got[name], want)
        for name, want in CORPUS_OUTCOME.items()
        if got[name] not in (want if isinstance(want, set) else {want})
    }
    assert wrong == {}, "attack: (got, pinned)"
    assert all(r.tier == "in_process" for r in results)
    assert host_env["sentinel"].poll() is None, "the host sentinel process was killed"
    assert host_env["hits"] == [], "a task reached the host's TCP server"
    assert not list(Path(host_env["host_dir"]).glob("pwned*"))


_CONNECT = """
import socket
def task_func():
    try:
        socket.create_connection(('127.0.0.1', PORT), timeout=2).close()
    except OSError:
        return 'isolated'
    return 'reached'
"""
_RETURNS = "import unittest\nclass TestCases(unittest.TestCase):\n    def test_it(self):\n" + (
    "        self.assertEqual(task_func(), EXPECTED)\n"
)


@needs_env
def test_no_network_not_even_the_hosts_loopback(listener) -> None:
    assert listener.reachable_from_host()
    connect = _CONNECT.replace("PORT", str(listener.port))
    task = UnittestTask(connect, _RETURNS.replace("EXPECTED", "'isolated'"))
    with InProcessSandbox(CONFIG.model_copy(update={"workers": 1})) as pool:
        result = pool.run(task)
    assert result.passed, result.summary
    assert listener.accepted == 1, "the task reached the host's listener"


@needs_env
def test_tasks_that_run_the_systems_programs_pass_as_under_the_official_harness() -> None:
    problems = {p.task_id: p for p in load_benchmark("bigcodebench", PROGRAMS / "BigCodeBench.jsonl")}
    rows = sample_rows(PROGRAMS / "samples.jsonl")
    tasks = [UnittestTask(r["solution"], problems[r["task_id"]].test_code) for r in rows]
    with InProcessSandbox(CONFIG) as pool:
        results = pool.run_many(tasks)
    got = [(r["task_id"], r["category"], official_status(res)) for r, res in zip(rows, results, strict=True)]
    want = [(r["task_id"], r["category"], "pass" if r["category"] == "correct" else "fail") for r in rows]
    assert got == want, [res.summary for res in results]


_WHERE = """
import os, sys
def task_func():
    planted = ['/tmp/scratch', os.path.join(os.path.dirname(sys.prefix), 'beside-the-venv')]
    left = [p for p in planted if os.path.exists(p)]
    for p in planted:
        open(p, 'w').write('x')
    return sys.prefix, left
"""


def test_runs_with_its_venv_under_the_hosts_tmp() -> None:
    """The sandbox's private /tmp is mounted before the venv is bound, so it cannot hide a venv in /tmp."""
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        venv = Path(tmp) / "checkout" / ".venv-bigcodebench"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        assert os.path.realpath(venv).startswith("/tmp/")
        task = UnittestTask(_WHERE, _RETURNS.replace("EXPECTED", f"({os.path.realpath(venv)!r}, [])"))
        config = CONFIG.model_copy(update={"env_venv": str(venv), "workers": 1})
        with InProcessSandbox(config) as pool:
            results = [pool.run(task) for _ in range(2)]  # the second finds /tmp emptied around the venv
    assert [r.passed for r in results] == [True, True], [r.summary for r in results]
