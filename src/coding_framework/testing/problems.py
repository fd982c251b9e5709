"""Small problems with tests, shared by the agent and graph tests."""

from __future__ import annotations

from coding_framework.problems import Problem

ADD = Problem(
    task_id="t/add",
    prompt="Write a function add(a, b) that returns a + b.",
    entry_point="add",
    test_code="assert add(1, 2) == 3\nassert add(-1, 1) == 0\nassert add(2, 2) == 4\n",
    prompt_is_code=False,
)
