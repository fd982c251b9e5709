from __future__ import annotations

from coding_framework.agents.reviewer import LLMReviewer, StaticReviewer
from coding_framework.agents.types import Execution
from coding_framework.config.agents import ReviewerConfig
from coding_framework.testing.chat import ScriptedChatModel

FAILED = Execution(
    passed=False,
    status="failed",
    has_tests=True,
    tests_passed=0,
    tests_total=2,
    feedback="0/2 tests passed.",
    failures=["test 1 `assert f(1) == 2` -> AssertionError", "test 2 `assert f(2) == 3` -> AssertionError"],
)


async def test_static_review_combines_tests_lint_and_complexity(add_problem) -> None:
    code = "import os\n\ndef add(a, b):\n    if a:\n        if b:\n            return a - b\n    return 0\n"
    review = await StaticReviewer(ReviewerConfig(max_nesting=1, lint_select=["F"])).areview(
        add_problem, code, FAILED
    )
    kinds = [f.kind for f in review.findings]
    assert kinds == ["test", "lint", "complexity"]
    assert review.findings[0].message.startswith("test 2")  # the Executor already quoted test 1
    assert "F401" in review.findings[1].message
    assert "nests blocks 2 deep" in review.findings[2].message
    assert review.text.startswith("Static review:\n- [test] test 2")
    assert review.source == "static" and review.tokens == 0


async def test_static_review_of_clean_code_says_so(add_problem) -> None:
    passed = FAILED.model_copy(update={"passed": True, "failures": [], "status": "passed"})
    review = await StaticReviewer().areview(add_problem, "def add(a, b):\n    return a + b\n", passed)
    assert review.findings == []
    assert review.text == "Static review: no lint or complexity findings."


async def test_static_review_reports_syntax_once_and_caps_the_list(add_problem) -> None:
    review = await StaticReviewer().areview(add_problem, "def add(a, b)\n    return a\n", FAILED)
    assert [f.kind for f in review.findings] == ["test", "syntax"]
    many = "\n".join(f"import m{i}" for i in range(9)) + "\n"
    capped = await StaticReviewer(ReviewerConfig(max_findings=3)).areview(add_problem, many, FAILED)
    assert capped.text.count("\n- ") == 4
    assert capped.text.endswith("... and 7 more")


async def test_llm_review_sends_code_and_results_and_counts_tokens(add_problem) -> None:
    model = ScriptedChatModel(answers=["- subtracts instead of adding"])
    review = await LLMReviewer(model).areview(add_problem, "def add(a, b):\n    return a - b\n", FAILED)
    assert review.text == "- subtracts instead of adding"
    assert review.source == "llm"
    (messages,) = model.calls
    assert "return a - b" in messages[-1].content and "0/2 tests passed." in messages[-1].content
    assert review.completion_tokens == 5 and review.prompt_tokens > 10
