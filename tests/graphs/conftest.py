from __future__ import annotations

import pytest

from coding_framework.problems import Problem
from coding_framework.testing.problems import ADD


@pytest.fixture
def add_problem() -> Problem:
    return ADD
