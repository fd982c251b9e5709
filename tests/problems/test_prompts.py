"""Prompt format and code extraction from model answers."""

from __future__ import annotations

import pytest

from coding_framework.problems import Problem
from coding_framework.problems.prompts import (
    SYSTEM_PROMPT,
    extract_code,
    format_answer,
    generation_messages,
    revision_messages,
)

FN = "def add(a, b):\n    return a + b\n"


def _problem(prompt_is_code: bool = True) -> Problem:
    prompt = (
        'def add(a, b):\n    """Return a + b."""\n'
        if prompt_is_code
        else "Write a function that adds a and b."
    )
    return Problem(
        task_id="t/0",
        prompt=prompt,
        entry_point="add",
        test_code="assert add(1, 2) == 3",
        prompt_is_code=prompt_is_code,
    )


def test_generation_messages_code_prompt() -> None:
    msgs = generation_messages(_problem())
    assert [m["role"] for m in msgs] == ["system", "user"]
    assert msgs[0]["content"] == SYSTEM_PROMPT
    assert 'def add(a, b):\n    """Return a + b."""' in msgs[1]["content"]
    assert "```python" in msgs[1]["content"]


def test_generation_messages_statement_names_entry_point() -> None:
    msgs = generation_messages(_problem(prompt_is_code=False))
    assert "adds a and b" in msgs[1]["content"]
    assert "`add`" in msgs[1]["content"]


def test_revision_messages_carry_feedback() -> None:
    msgs = revision_messages(
        _problem(), "def add(a, b):\n    return a - b\n", "failed: assert add(1, 2) == 3"
    )
    assert len(msgs) == 1 and msgs[0]["role"] == "user"
    assert "failed: assert add(1, 2) == 3" in msgs[0]["content"]


def test_format_answer_round_trips() -> None:
    assert extract_code(format_answer(FN), "add") == FN


@pytest.mark.parametrize(
    "text",
    [
        f"```python\n{FN}```",
        f"Here you go:\n\n```python\n{FN}```\nThis adds the numbers.",
        f"```py\n{FN}```",
        f"```Python3\n{FN}```",
        f"```\n{FN}```",
        f"~~~python\n{FN}~~~",
        f"````python\n{FN}````",
        f"```python\n{FN}",  # missing closing fence
        f"```python\n{FN}    x = (",  # cut off mid-statement, no closing fence
        f"  ```python\n  {FN.replace(chr(10) + '    ', chr(10) + '      ')}  ```",  # indented block
        FN,  # bare code
        f"Sure! Here is the function:\n{FN}\nIt returns the sum.",  # bare code between prose
        f"```python\n{FN}```\n\nExample:\n```python\nprint(add(1, 2))\n```",  # usage block after
        f"```python\ndef helper():\n    pass\n```\n```python\n{FN}```",  # entry point in the second block
        f"```bash\npip install nothing\n```\n```python\n{FN}```",  # non-python block skipped
    ],
)
def test_extract_code_shapes(text: str) -> None:
    code = extract_code(text, "add")
    assert code is not None
    namespace: dict = {}
    exec(code, namespace)
    assert namespace["add"](2, 3) == 5


def test_extract_code_prefers_last_block_defining_entry_point() -> None:
    text = "```python\ndef add(a, b):\n    return a - b\n```\nOops, fixed:\n```python\n" + FN + "```"
    assert extract_code(text, "add") == FN


def test_extract_code_without_entry_point_takes_last_function_block() -> None:
    text = f"```python\n{FN}```\n```python\nprint(add(1, 2))\n```"
    assert extract_code(text) == FN


def test_extract_code_keeps_imports_and_helpers_in_block() -> None:
    code = (
        "import math\n\n\ndef _h(x):\n    return math.floor(x)\n\n\n"
        "def add(a, b):\n    return _h(a) + _h(b)\n"
    )
    assert extract_code(f"```python\n{code}```", "add") == code


@pytest.mark.parametrize("text", ["", "I don't know.", "The answer is 42.\nSorry.", "```text\nhello\n```"])
def test_extract_code_none_when_no_code(text: str) -> None:
    assert extract_code(text, "add") is None


def test_extract_code_falls_back_to_any_code_block() -> None:
    # No block defines a function: the (last) code block is still the best guess.
    assert extract_code("```python\nadd = lambda a, b: a + b\n```", "add") == "add = lambda a, b: a + b\n"
