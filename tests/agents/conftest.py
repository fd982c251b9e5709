from __future__ import annotations

import pytest

from coding_framework.problems import Problem
from coding_framework.testing.problems import ADD


@pytest.fixture
def add_problem() -> Problem:
    return ADD


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
