"""Grading owns languages and tiers: `tier_of` routes every problem, and C++ compiles inside the Grader."""

from __future__ import annotations

import json

import pytest

from coding_framework.config import SandboxConfig
from coding_framework.grading import Grader, languages_for, tier_of
from coding_framework.problems import Problem, builtin_problems
from coding_framework.sandbox import cpp

STDIO = Problem(
    task_id="toy/sum", prompt="Print the sum of two integers.", entry_point="main", test_format="stdio",
    test_code=json.dumps({"tests": [["2 3\n", "5\n"], ["40 2\n", "42\n"]], "time_limit_s": 2.0,
                          "time_factor": {"python": 2.0, "cpp": 1.0}, "memory_bytes": 256 << 20,
                          "float_tolerance": 0.0}),
    prompt_is_code=False,
)  # fmt: skip
PYTHON_SUM = "a, b = map(int, input().split())\nprint(a + b)\n"
CPP_SUM = '#include <cstdio>\nint main(){int a,b;scanf("%d %d",&a,&b);printf("%d\\n",a+b);}\n'


@pytest.mark.parametrize(
    ("test_format", "tier"),
    [("unittest", "in_process"), ("asserts", "hardened"), ("check_function", "hardened"),
     ("stdio", "hardened"), ("calls", "hardened")],
)  # fmt: skip
def test_only_unittest_tests_run_in_process(test_format: str, tier: str) -> None:
    assert tier_of(STDIO.model_copy(update={"test_format": test_format})) == tier


def test_only_stdio_problems_take_cpp() -> None:
    function_level = builtin_problems()[0]
    assert languages_for(STDIO) == ("python", "cpp")
    assert languages_for(function_level) == ("python",)
    with Grader(SandboxConfig(workers=1)) as grader, pytest.raises(ValueError, match="python only"):
        grader.grade_many([(function_level, CPP_SUM)], languages=["cpp"])


@pytest.mark.skipif(cpp.compiler() is None, reason="no g++ on PATH")
def test_cpp_compiles_inside_the_grader_and_a_compile_error_is_a_result() -> None:
    programs = [PYTHON_SUM, CPP_SUM, "int main( {", CPP_SUM.replace("+", "-")]
    items = [(STDIO, program) for program in programs]
    with Grader(SandboxConfig(workers=2)) as grader:
        results = grader.grade_many(items, languages=["python", "cpp", "cpp", "cpp"])
    assert [r.passed for r in results] == [True, True, False, False]
    assert results[2].error_type == "CompileError" and results[3].status == "failed"
    assert {r.tier for r in results} == {"hardened"}
