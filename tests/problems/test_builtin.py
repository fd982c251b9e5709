"""Built-in training set invariants and the HumanEval-style prompt builder."""

from __future__ import annotations

import ast
from collections import Counter

import pytest

from coding_framework.problems import ProblemLoadError, builtin_problems, load_benchmark
from coding_framework.problems.builtin import builtin_problem, humaneval_prompt


@pytest.fixture(scope="module")
def problems():
    return builtin_problems()


def _asserts(problem) -> list[str]:
    return [line for line in problem.test_code.splitlines() if line.startswith("assert ")]


def test_size_ids_and_names_are_unique(problems) -> None:
    assert 60 <= len(problems) <= 100
    assert len({p.task_id for p in problems}) == len(problems)
    assert len({p.entry_point for p in problems}) == len(problems)
    assert all(p.task_id == f"builtin/{p.entry_point}" for p in problems)


def test_each_problem_is_complete(problems) -> None:
    for p in problems:
        assert len(_asserts(p)) >= 4, p.task_id
        assert len(p.test_code.splitlines()) == len(_asserts(p)), p.task_id
        assert all(p.entry_point in line for line in _asserts(p)), p.task_id
        assert 2 <= len(p.solutions) <= 3 and len(set(p.solutions)) == len(p.solutions), p.task_id
        assert all(s.startswith(p.prompt) for s in p.solutions), p.task_id
        assert p.description and "def " not in p.description, p.task_id
        assert p.tags and p.source == "builtin" and p.prompt_is_code and p.test_format == "asserts"


def test_prompts_are_signature_and_docstring(problems) -> None:
    for p in problems:
        (fn,) = ast.parse(p.prompt).body
        assert isinstance(fn, ast.FunctionDef) and fn.name == p.entry_point
        assert len(fn.body) == 1 and ast.get_docstring(fn), p.task_id
        assert p.prompt.count(">>> ") == 2, p.task_id


def test_topics_and_difficulties_vary(problems) -> None:
    topics = Counter(p.tags[0] for p in problems)
    assert set(topics) == {"strings", "lists", "math", "dicts", "algorithms"}
    assert all(n >= 8 for n in topics.values()), topics
    difficulties = Counter(p.difficulty for p in problems)
    assert set(difficulties) == {"easy", "medium", "hard"}


def test_returns_a_fresh_list_each_call(problems) -> None:
    mine = builtin_problems()
    mine.clear()
    assert builtin_problems() == problems
    assert load_benchmark("builtin") == problems


def test_humaneval_prompt_shows_examples_from_the_tests() -> None:
    tests = ["assert f('ab') == 'ba'", "assert not g(2)", "assert h(1)", "assert abs(f(1) - 2) < 1e-9"]
    prompt = humaneval_prompt("def f(s: str) -> str:", "Reverse s.\n", tests, examples=3)
    assert prompt == (
        "def f(s: str) -> str:\n    \"\"\"Reverse s.\n\n    >>> f('ab')\n    'ba'\n"
        '    >>> g(2)\n    False\n    >>> h(1)\n    True\n    """\n'
    )
    assert (
        humaneval_prompt("def f():", "Do it.", ["assert abs(f() - 1) < 1e-9"])
        == 'def f():\n    """Do it.\n    """\n'
    )


def test_bad_entries_are_load_errors() -> None:
    entry = {
        "name": "f",
        "signature": "def f(x):",
        "doc": "Return x.",
        "description": "Write a function that returns its argument.",
        "difficulty": "easy",
        "tags": ["misc"],
        "tests": "assert f(1) == 1\n",
        "solutions": ["return x\n"],
    }
    assert builtin_problem(entry, "t.yaml#0").solutions == [
        'def f(x):\n    """Return x.\n\n    >>> f(1)\n    1\n    """\n    return x\n'
    ]
    with pytest.raises(ProblemLoadError, match=r"t\.yaml#1: expected exactly the keys"):
        builtin_problem({k: v for k, v in entry.items() if k != "tags"}, "t.yaml#1")
    with pytest.raises(ProblemLoadError, match=r"(?s)t\.yaml#2 \(f\): .*difficulty"):
        builtin_problem({**entry, "difficulty": "trivial"}, "t.yaml#2")
