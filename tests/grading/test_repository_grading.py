"""Repository tasks graded by their hidden tests in the hardened judge: verdicts, rewards, refused edits."""

from __future__ import annotations

from pathlib import Path

import pytest

from coding_framework.grading import Grader
from coding_framework.grading.repository import (
    RepositoryTestError,
    agent_diff,
    grade_repositories,
    hidden_suite,
    protected,
)
from coding_framework.repotasks import load_swebench
from coding_framework.testing.repository import calc_task

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "swebench"


@pytest.fixture(scope="module")
def grader():
    with Grader() as g:
        yield g


def test_hidden_tests_become_one_unit_each_with_repository_imports_in_the_child():
    task = calc_task()
    suite = hidden_suite(task)
    hidden = "tests/test_calc_hidden.py::"
    assert suite.names == tuple(hidden + n for n in ("test_total", "test_add", "test_half_negative",
                                                     "test_half_odd"))
    assert set(suite.names) == set(task.FAIL_TO_PASS) | set(task.PASS_TO_PASS)
    assert suite.imports == ("from calc.api import total", "from calc.ops import add, half")
    assert suite.problem.test_format == "check_function"
    assert "from calc" not in suite.problem.test_code  # the repository is imported in the child only
    assert suite.problem.test_code.count("assert _cf_test_") == 4


def test_verdicts_of_the_snapshot_the_fix_and_a_broken_repository(grader):
    task = calc_task()
    broken = {**task.fixed_files(), "calc/api.py": "def total(:\n"}
    partial = {**task.files, "calc/api.py": "def total(xs):\n    return sum(xs)\n"}
    before, fixed, collect_error, half = grade_repositories(
        grader, [(task, task.files), (task, task.fixed_files()), (task, broken), (task, partial)])
    assert (before.resolved, before.fail_to_pass, before.pass_to_pass) == (False, (0, 2), (2, 2))
    assert before.reward == 0
    assert (fixed.resolved, fixed.reward, fixed.status) == (True, 1.0, "passed")
    # A repository that does not import collects no test: every hidden test counts as failed.
    assert (collect_error.fail_to_pass, collect_error.pass_to_pass) == ((0, 2), (0, 2))
    assert half.fail_to_pass == (1, 2) and half.reward == 0.5 and not half.resolved
    assert all(v.tier == "hardened-repository" and not v.infrastructure_error
               for v in (before, fixed, collect_error, half))


def test_edits_to_tests_and_configuration_are_refused_and_the_rest_applied():
    task = calc_task()
    after = {**task.fixed_files(), "tests/test_ops.py": "", "conftest.py": "x = 1\n",
             "pkg.pth": "import os\n",
             "setup.cfg": "[tool:pytest]\n", "calc/new.py": "y = 2\n"}
    diff = agent_diff(task.files, after)
    assert diff.refused == ("conftest.py", "pkg.pth", "setup.cfg", "tests/test_ops.py")
    assert set(diff.changed) == {"calc/ops.py", "calc/new.py"}
    assert all(protected(p) for p in ("tests/a.py", "src/test_x.py", "x_test.py", "sub/conftest.py",
                                      "sitecustomize.py", "pyproject.toml", ".git/config"))
    assert not any(protected(p) for p in ("calc/ops.py", "README.md", "calc/testing_utils.py"))


def test_hidden_tests_of_another_shape_are_refused_in_one_line():
    task = calc_task()
    bad = task.model_copy(update={"test_patch": task.test_patch.replace("+import pytest", "+DATA = [1]")})
    with pytest.raises(RepositoryTestError, match="plain test functions"):
        hidden_suite(bad)
    missing = task.model_copy(update={"FAIL_TO_PASS": ["tests/test_calc_hidden.py::test_nothing"]})
    with pytest.raises(RepositoryTestError, match="not in its test_patch"):
        hidden_suite(missing)


def test_the_swebench_fixture_is_graded_with_approx_and_its_own_exception_class(grader):
    """tinycalc's tests use `pytest.approx` and `pytest.raises(CalcError)`, the repository's own class."""
    tasks = load_swebench(FIXTURE / "tasks.jsonl", FIXTURE / "repos")
    fixed = grade_repositories(grader, [(t, t.fixed_files()) for t in tasks])
    unchanged = grade_repositories(grader, [(t, t.files) for t in tasks])
    assert [v.resolved for v in fixed] == [True, True]
    assert [v.resolved for v in unchanged] == [False, False]
    assert all(v.fail_to_pass[0] == 0 for v in unchanged)
