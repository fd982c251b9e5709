"""One grader, two trust tiers: function-level problems are hardened, unittest problems in-process."""

from __future__ import annotations

import pytest

from coding_framework.config import SandboxConfig
from coding_framework.config.inprocess import InProcessConfig
from coding_framework.grading import Grader, job_for
from coding_framework.problems import Problem, builtin_problems, load_benchmark
from tests.sandbox.bigcodebench_env import DATA, needs_env


def test_unittest_problems_are_not_jobs():
    problem = load_benchmark("bigcodebench", DATA)[0]
    with pytest.raises(ValueError, match="in-process tier runs them"):
        job_for(problem, problem.solutions[0])


@needs_env
@pytest.mark.slow
async def test_mixed_batch_keeps_order_and_labels_tiers():
    bcb = load_benchmark("bigcodebench", DATA)[:3]
    fn = builtin_problems()[:2]
    items = [(bcb[0], bcb[0].solutions[0]), (fn[0], fn[0].solutions[0]), (bcb[1], "def task_func(data):\n")]
    items += [(fn[1], "def nothing(): pass\n"), (bcb[2], bcb[2].solutions[0])]
    config = SandboxConfig(workers=2, inprocess=InProcessConfig(timeout_s=5, workers=2))
    with Grader(config) as grader:
        results = grader.grade_many(items)
        single = await grader.agrade(*items[0])
    assert [r.passed for r in results] == [True, True, False, False, True]
    assert [r.tier for r in results] == ["in_process", "hardened", "in_process", "hardened", "in_process"]
    assert single.passed and single.tier == "in_process"


_SNOOP = """
import glob, os
def task_func():
    found = [k for k, v in os.environ.items() if 'host-secret' in v]
    read = 0
    for path in glob.glob('/proc/[0-9]*/environ'):
        try:
            data = open(path, 'rb').read()
        except OSError:
            continue
        read += 1
        found += [path] if b'host-secret' in data else []
    return found, read > 0
"""
_NOTHING_FOUND = (
    "import unittest\nclass TestCases(unittest.TestCase):\n    def test_it(self):\n"
    "        self.assertEqual(task_func(), ([], True))\n"
)


@needs_env
def test_a_secret_in_the_graders_environment_is_out_of_a_tasks_reach(monkeypatch):
    """Not in os.environ, nor in any /proc/*/environ the task can read (it can read its own, at least)."""
    monkeypatch.setenv("CODING_FRAMEWORK_TEST_API_KEY", "host-secret-7c1e")
    snoop = Problem(
        task_id="BigCodeBench/snoop", prompt="def task_func():\n", entry_point="task_func",
        test_code=_NOTHING_FOUND, test_format="unittest", source="bigcodebench",
    )  # fmt: skip
    config = SandboxConfig(workers=1, inprocess=InProcessConfig(workers=1, timeout_s=10, preload=[]))
    with Grader(config) as grader:
        result = grader.grade(snoop, _SNOOP)
    assert result.passed, result.summary
