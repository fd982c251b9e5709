"""One grader, two trust tiers: function-level problems are hardened, unittest problems in-process."""

from __future__ import annotations

import pytest

from coding_framework.config import SandboxConfig
from coding_framework.config.inprocess import InProcessConfig
from coding_framework.grading import Grader, job_for
from coding_framework.problems import builtin_problems, load_benchmark
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
