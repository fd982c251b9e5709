from __future__ import annotations

import pytest

from coding_framework.agents.analysis import complexity_findings, function_metrics, lint_findings

BRANCHY = """
def f(x):
    if x and x > 1 or x < -1:
        for i in range(3):
            while i:
                if i > 1:
                    try:
                        i -= 1
                    except ValueError:
                        return None
    return [a for a in range(x) if a if a % 2]
"""


def test_metrics_count_decisions_nesting_and_length() -> None:
    (m,) = function_metrics(BRANCHY)
    # if + and/or (2) + for + while + if + except + comprehension with 2 filters (3) = 10
    assert (m.name, m.branches, m.nesting, m.length) == ("f", 10, 5, 10)


def test_nested_functions_are_measured_on_their_own() -> None:
    code = "def outer():\n    def inner(y):\n        if y:\n            return 1\n    return inner\n"
    metrics = {m.name: m for m in function_metrics(code)}
    assert metrics["outer"].nesting == 0
    assert metrics["inner"].nesting == 1


def test_complexity_findings_name_each_limit() -> None:
    findings = complexity_findings(BRANCHY, max_branches=5, max_nesting=3, max_length=8)
    messages = " ".join(f.message for f in findings)
    assert [f.kind for f in findings] == ["complexity"] * 3
    assert "10 decision points (limit 5)" in messages
    assert "5 deep (limit 3)" in messages
    assert "10 lines long (limit 8)" in messages
    assert complexity_findings(BRANCHY, 10, 5, 10) == []


def test_syntax_error_is_one_finding() -> None:
    (finding,) = complexity_findings("def f(:\n    pass\n", 10, 4, 60)
    assert finding.kind == "syntax"
    assert finding.line == 1


async def test_ruff_reports_real_lint() -> None:
    code = "import os\n\ndef f(x):\n    unused = 1\n    return x\n"
    findings = await lint_findings(code, ["F"])
    codes = sorted(f.message.split()[0] for f in findings)
    assert codes == ["F401", "F841"]
    assert {f.line for f in findings} == {1, 4}
    assert await lint_findings("def f(x):\n    return x\n", ["F"]) == []


async def test_ruff_rule_selection_is_respected() -> None:
    code = "def f(x):\n    try:\n        return 1 / x\n    except:\n        return None\n"
    assert await lint_findings(code, ["F"]) == []
    assert [f.message.split()[0] for f in await lint_findings(code, ["E7"])] == ["E722"]


async def test_bad_rule_selection_is_a_clear_error() -> None:
    with pytest.raises(RuntimeError, match="ruff failed"):
        await lint_findings("x = 1\n", ["NOTARULE"])
