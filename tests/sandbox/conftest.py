from __future__ import annotations

import pytest

from coding_framework.config import SandboxConfig
from coding_framework.sandbox import Sandbox


@pytest.fixture(scope="session")
def sandbox():
    with Sandbox(SandboxConfig(workers=4)) as sb:
        yield sb
