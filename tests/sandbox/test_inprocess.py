"""The in-process tier: verdicts on the BigCodeBench fixture, per-test details, and what a task can reach."""

from __future__ import annotations

import pytest

from coding_framework.config.inprocess import InProcessConfig
from coding_framework.problems import load_benchmark
from coding_framework.sandbox.inprocess import (
    InProcessSandbox,
    UnittestTask,
    official_details,
    official_status,
)
from tests.sandbox.bigcodebench_env import DATA, EXPECTED, needs_env, sample_rows

pytestmark = [needs_env, pytest.mark.slow]
CONFIG = InProcessConfig(timeout_s=3.0, workers=2, memory_mb=4096, data_mb=4096)


@pytest.fixture(scope="module")
def problems():
    return {p.task_id: p for p in load_benchmark("bigcodebench", DATA)}


@pytest.fixture(scope="module")
def pool():
    with InProcessSandbox(CONFIG) as sb:
        yield sb


def _task(problem, solution):
    return UnittestTask(solution, problem.test_code, problem.code_prompt)


def test_fixture_verdicts(pool, problems):
    rows = sample_rows()
    results = pool.run_many([_task(problems[r["task_id"]], r["solution"]) for r in rows])
    for row, res in zip(rows, results, strict=True):
        statuses, official = EXPECTED[row["category"]]
        assert res.status in statuses, (row, res.summary)
        assert res.tier == "in_process" and res.isolation["tests_in_submission_process"]
        if official is not None:
            assert official_status(res) == official
    crashes = [(r["solution"], res) for r, res in zip(rows, results, strict=True) if r["category"] == "crash"]
    by_kind = {("_exit" in s or "SIGKILL" in s): official_status(res) for s, res in crashes}
    assert by_kind == {True: "timeout", False: "fail"}  # a dead process vs an error while loading


def test_per_test_details(pool, problems):
    p = problems["BigCodeBench/3"]
    wrong = next(r for r in sample_rows() if r["task_id"] == p.task_id and r["category"] == "wrong")
    res = pool.run(_task(p, wrong["solution"]))
    assert [t.source for t in res.tests] == ["test_seeded", "test_uses_choice", "test_zero"]
    assert [t.passed for t in res.tests] == [True, False, True]
    assert res.tests[1].error_type == "AssertionError"
    assert res.summary.startswith("failed: AssertionError in test 1: AssertionError: Lists differ")
    assert set(official_details(res)) == {"test_uses_choice"}
    broken = pool.run(_task(p, "def task_func(:\n"))
    assert broken.status == "error" and broken.error_type == "SyntaxError"
    assert list(official_details(broken)) == ["ALL"]


def test_calibrated_solution_gets_the_code_prompt(pool, problems):
    p = problems["BigCodeBench/0"]
    body_only = "def task_func(arr):\n    arr = np.asarray(arr, dtype=float)\n    s = arr.std()\n" + (
        "    return np.zeros_like(arr) if s == 0 else (arr - arr.mean()) / s\n"
    )
    assert pool.run(_task(p, body_only)).passed


_LEAVE_BEHIND = """
import os, time, socket
def task_func():
    if os.fork() == 0:
        os.setsid()
        time.sleep(0.5)
        open('/tmp/left-behind', 'w').write('x')
        os._exit(0)
    with open('/tmp/own-file', 'w') as f:
        f.write('x')
    try:
        socket.create_connection(('1.1.1.1', 53), timeout=1)
        return 'network'
    except OSError:
        return 'contained'
"""
_CHECK_LEFTOVERS = """
import os, sys
def task_func():
    pids = [p for p in os.listdir('/proc') if p.isdigit()]
    venv = sys.prefix.split('/')[2] if sys.prefix.startswith('/tmp/') else None  # a checkout in /tmp
    return sorted(n for n in os.listdir('/tmp') if n != venv), len(pids)
"""
_CHECK_TESTS = """
import unittest
class TestCases(unittest.TestCase):
    def test_it(self):
        names, n_processes = task_func()
        self.assertEqual(len(names), 2)  # the font cache and this task's own folder, nothing else
        self.assertIn('mpl', names)
        self.assertEqual(n_processes, 3)  # bwrap's init, the zygote, this task
"""
_TESTS = """
import unittest
class TestCases(unittest.TestCase):
    def test_it(self):
        self.assertEqual(task_func(), EXPECTED)
"""


def test_nothing_outlives_a_task():
    with InProcessSandbox(CONFIG.model_copy(update={"workers": 1})) as one:
        first = one.run(UnittestTask(_LEAVE_BEHIND, _TESTS.replace("EXPECTED", "'contained'")))
        assert first.passed, first.summary
        later = one.run(UnittestTask(_CHECK_LEFTOVERS, _CHECK_TESTS))
        assert later.passed, later.summary


def test_missing_environment_is_a_clear_error(tmp_path):
    from coding_framework.sandbox.backends.base import BackendUnavailable

    missing = InProcessConfig(env_venv=str(tmp_path / "nope"))
    with (
        InProcessSandbox(missing) as sb,
        pytest.raises(BackendUnavailable, match=r"setup_bigcodebench_env\.sh"),
    ):
        sb.run(UnittestTask("def task_func(): pass", _TESTS))
