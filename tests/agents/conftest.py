from __future__ import annotations

import pytest

from coding_framework.problems import Problem


@pytest.fixture
def add_problem() -> Problem:
    return Problem(
        task_id="t/add",
        prompt="Write a function add(a, b) that returns a + b.",
        entry_point="add",
        test_code="assert add(1, 2) == 3\nassert add(-1, 1) == 0\nassert add(2, 2) == 4\n",
        prompt_is_code=False,
    )


@pytest.fixture
def stub_problem() -> Problem:
    """HumanEval style: the prompt is code (an import, a helper and the stub) the answer completes."""
    prompt = (
        "from typing import List\n\n\ndef helper(x: int) -> int:\n    return x * 2\n\n\n"
        'def double_all(xs: List[int]) -> List[int]:\n    """Double every element."""\n'
    )
    return Problem(
        task_id="t/double",
        prompt=prompt,
        entry_point="double_all",
        test_format="check_function",
        test_code=(
            "def check(candidate):\n    assert candidate([1, 2]) == [2, 4]\n    assert candidate([]) == []\n"
        ),
    )
