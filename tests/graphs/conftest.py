from __future__ import annotations

import pytest

from coding_framework.problems import Problem
from tests.fakes.problems import ADD


@pytest.fixture
def add_problem() -> Problem:
    return ADD
