"""Client tests are untrusted: a request's tests cannot change another request's verdict or read its data.

Each hostile test from the corpus runs beside concurrent victims and before later ones on the serving
judges (``judge_sandbox_config``: one fresh judge per job). A control run on a reused judge shows the
attacks are real: there the patched judge passes a wrong program.
"""

from __future__ import annotations

import concurrent.futures

import pytest

from benchmarks.grading.adversarial_corpus import HOSTILE_TESTS, HostileTests
from coding_framework.config.sandbox import SandboxConfig
from coding_framework.config.serving import SolveConfig
from coding_framework.sandbox import Job, Sandbox
from coding_framework.serving.judges import judge_sandbox_config

pytestmark = pytest.mark.slow

SECRET_TESTS = "# SECRET-OF-ANOTHER-REQUEST\nimport time\ntime.sleep(0.3)\nassert add(1, 2) == 3\n"
RIGHT = Job(program="def add(a, b):\n    return a + b\n", test_code=SECRET_TESTS, entry_point="add")
WRONG = Job(program="def add(a, b):\n    return a - b\n", test_code=SECRET_TESTS, entry_point="add")


@pytest.fixture(scope="module")
def judges():
    with Sandbox(judge_sandbox_config(SolveConfig(judge_workers=3))) as sandbox:
        yield sandbox


def _hostile(attack: HostileTests) -> Job:
    return Job(program="def add(a, b):\n    return a - b\n", test_code=attack.tests, entry_point="add")


@pytest.mark.parametrize("attack", HOSTILE_TESTS, ids=[a.name for a in HOSTILE_TESTS])
def test_hostile_tests_change_no_other_verdict(judges: Sandbox, attack: HostileTests) -> None:
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        hostile = pool.submit(judges.run, _hostile(attack))
        beside = [pool.submit(judges.run, job) for job in (RIGHT, WRONG)]
        verdicts = [f.result().passed for f in beside]
        hostile_result = hostile.result()
    after = [judges.run(job).passed for job in (RIGHT, WRONG, RIGHT, WRONG)]
    assert verdicts == [True, False] and after == [True, False, True, False]
    if attack.category in ("snoop", "denial"):  # it saw nothing of the others and could not hang the host
        assert not hostile_result.passed


def test_memory_exhaustion_is_capped_inside_the_judge(judges: Sandbox) -> None:
    attack = next(a for a in HOSTILE_TESTS if a.name == "exhaust_memory")
    result = judges.run(_hostile(attack))
    assert not result.passed and result.duration_s < 30


def test_control_a_reused_judge_is_fooled() -> None:
    """Without a judge per job, the patched judge passes a wrong program: the isolation above matters."""
    attack = next(a for a in HOSTILE_TESTS if a.name == "patch_judge_run_job")
    with Sandbox(SandboxConfig(workers=1, recycle_after=500)) as shared:
        shared.run(_hostile(attack))
        assert shared.run(WRONG).passed
