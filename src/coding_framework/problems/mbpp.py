"""MBPP (Austin et al. 2021): 974 basic Python tasks stated in prose and graded by three asserts each.

:func:`load_mbpp` reads a local file or folder (``mbpp.jsonl`` for the full set, ``sanitized-mbpp.json`` for
the hand-verified 427), or the Hugging Face hub when ``source`` is ``None`` / ``"hf"``. Splits follow the
paper's task-id ranges (:data:`SPLITS`); the sanitized variant keeps the same ranges restricted to its tasks.
``challenge_test_list`` is not used, as in the paper's evaluation.
"""

from __future__ import annotations

import ast
import builtins
import warnings
from pathlib import Path
from typing import Literal

from coding_framework.problems._io import (
    ProblemLoadError,
    Record,
    check_unique,
    find_file,
    hub_records,
    local_path,
    read_records,
)
from coding_framework.problems.humaneval import solution_difficulty
from coding_framework.problems.problem import Problem

MbppVariant = Literal["full", "sanitized"]
MbppSplit = Literal["all", "train", "validation", "test", "prompt"]

HUB_DATASET = "google-research-datasets/mbpp"
SPLITS: dict[str, range] = {
    "prompt": range(1, 11),
    "test": range(11, 511),
    "validation": range(511, 601),
    "train": range(601, 975),
}
_FILES: dict[str, tuple[str, ...]] = {
    "full": ("mbpp.jsonl", "mbpp.jsonl.gz"),
    "sanitized": ("sanitized-mbpp.json", "sanitized-mbpp.jsonl", "sanitized-mbpp.json.gz"),
}
_INTRO = "You are an expert Python programmer, and here is your task: "

# Tasks 2, 3 and 4 of the full set: the paper's three few-shot examples (text, code, tests).
FEW_SHOT_TASKS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "Write a function to find the similar elements from the given two tuple lists.",
        (
            "def similar_elements(test_tup1, test_tup2):\n  res = tuple(set(test_tup1) & set(test_tup2))\n"
            "  return (res) "
        ),
        (
            "assert similar_elements((3, 4, 5, 6),(5, 7, 4, 10)) == (4, 5)",
            "assert similar_elements((1, 2, 3, 4),(5, 4, 3, 7)) == (3, 4)",
            "assert similar_elements((11, 12, 14, 13),(17, 15, 14, 13)) == (13, 14)",
        ),
    ),
    (
        "Write a python function to identify non-prime numbers.",
        (
            "import math\ndef is_not_prime(n):\n    result = False\n"
            "    for i in range(2,int(math.sqrt(n)) + 1):\n"
            "        if n % i == 0:\n            result = True\n    return result"
        ),
        (
            "assert is_not_prime(2) == False",
            "assert is_not_prime(10) == True",
            "assert is_not_prime(35) == True",
        ),
    ),
    (
        "Write a function to find the largest integers from a given list of numbers using heap queue "
        "algorithm.",
        (
            "import heapq as hq\ndef heap_queue_largest(nums,n):\n  largest_nums = hq.nlargest(n, nums)\n"
            "  return largest_nums"
        ),
        (
            "assert heap_queue_largest( [25, 35, 22, 85, 14, 65, 75, 22, 58],3)==[85, 75, 65] ",
            "assert heap_queue_largest( [25, 35, 22, 85, 14, 65, 75, 22, 58],2)==[85, 75] ",
            "assert heap_queue_largest( [25, 35, 22, 85, 14, 65, 75, 22, 58],5)==[85, 75, 65, 58, 35]",
        ),
    ),
)


def load_mbpp(
    source: str | Path | None = None, variant: MbppVariant = "full", split: MbppSplit = "all"
) -> list[Problem]:
    """MBPP problems of ``variant`` in ``split``, ordered by task id."""
    if variant not in _FILES:
        raise ProblemLoadError(f"unknown MBPP variant {variant!r}; choose 'full' or 'sanitized'")
    if split != "all" and split not in SPLITS:
        raise ProblemLoadError(f"unknown MBPP split {split!r}; choose one of all, {', '.join(SPLITS)}")
    records = _records(source, variant)
    problems = [mbpp_problem(r, variant) for r in records]
    check_unique(problems, records)
    keep = range(1, 975) if split == "all" else SPLITS[split]
    return sorted((p for p in problems if _task_number(p) in keep), key=_task_number)


def _records(source: str | Path | None, variant: MbppVariant) -> list[Record]:
    if source is None or source == "hf" or (isinstance(source, str) and source.startswith("hf:")):
        dataset = (source or "").partition(":")[2] or HUB_DATASET
        return hub_records(dataset, variant, _FILES[variant][0])
    path = local_path(source)
    records = read_records(find_file(path, _FILES[variant]) if path.is_dir() else path)
    found: MbppVariant = "sanitized" if "prompt" in records[0].data else "full"
    if found != variant:
        raise ProblemLoadError(
            f"{records[0].where}: the file holds {found} MBPP records, but variant={variant!r}; "
            f"pass variant={found!r}"
        )
    return records


def _task_number(problem: Problem) -> int:
    return int(problem.task_id.removeprefix("Mbpp/"))


def mbpp_problem(record: Record, variant: MbppVariant) -> Problem:
    """Map a full (``text``, ``test_setup_code``) or sanitized (``prompt``, ``test_imports``) record."""
    task_number = record.field("task_id", int)
    text = record.field("text" if variant == "full" else "prompt").strip()
    code = _newlines(record.field("code"))
    tests = [t.strip() for t in record.field("test_list", list)]
    if variant == "full":
        setup = _newlines(record.field("test_setup_code")).strip()
    else:
        setup = "\n".join(record.field("test_imports", list))
    code_tree, test_trees = _parse(record, code, tests)
    try:
        return Problem(
            task_id=f"Mbpp/{task_number}",
            prompt=mbpp_prompt(text, tests),
            entry_point=_entry_point(record, code_tree, test_trees),
            test_code="\n".join(filter(None, [setup, *tests])) + "\n",
            test_format="asserts",
            prelude=_test_imports(setup, code_tree, test_trees),
            solutions=[code],
            description=text,
            difficulty=solution_difficulty(code),
            tags=["sanitized"] if variant == "sanitized" else [],
            source="mbpp",
            prompt_is_code=False,
        )
    except ValueError as exc:
        raise ProblemLoadError(f"{record.where}: invalid problem Mbpp/{task_number}: {exc}") from exc


def _newlines(text: str) -> str:
    """Unix newlines: most full-set code uses CRLF, and four tasks end in a lone CR."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _parse(record: Record, code: str, tests: list[str]) -> tuple[ast.Module, list[ast.Module]]:
    if not tests or not all(isinstance(t, str) for t in tests):
        raise ProblemLoadError(f"{record.where}: 'test_list' must be a non-empty list of strings")
    try:
        with warnings.catch_warnings():
            # Some references hold invalid escapes like "\d" in plain strings; that is not our concern here.
            warnings.simplefilter("ignore", (SyntaxWarning, DeprecationWarning))
            return ast.parse(code), [ast.parse(t) for t in tests]
    except SyntaxError as exc:
        raise ProblemLoadError(f"{record.where}: code or tests are not valid Python: {exc}") from exc


def _entry_point(record: Record, code: ast.Module, tests: list[ast.Module]) -> str:
    """The first function the asserts call that the reference code defines at top level.

    Falls back to the first called non-builtin name when the reference defines none of them.
    """
    defined = {n.name for n in code.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    called = [
        node.func.id
        for tree in tests
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    ]
    for name in called:
        if name in defined:
            return name
    for name in called:
        if not hasattr(builtins, name):
            return name
    raise ProblemLoadError(f"{record.where}: cannot find the function under test in the asserts")


def _test_imports(setup: str, code: ast.Module, tests: list[ast.Module]) -> str:
    """Imports the tests rely on: those of the setup code, plus reference-code imports the asserts name.

    Full MBPP lists no test imports, yet task 596 asserts on ``sys.getsizeof``, imported only by its code.
    """
    lines = [ast.unparse(n) for n in ast.parse(setup).body if isinstance(n, ast.Import | ast.ImportFrom)]
    used = {n.id for tree in tests for n in ast.walk(tree) if isinstance(n, ast.Name)}
    for node in code.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            bound = {(a.asname or a.name).split(".")[0] for a in node.names}
            if bound & used and ast.unparse(node) not in lines:
                lines.append(ast.unparse(node))
    return "\n".join(lines) + "\n" if lines else ""


def mbpp_prompt(text: str, tests: list[str] | tuple[str, ...]) -> str:
    """The paper's prompt for one task: the statement, then its tests (no ``[BEGIN]`` marker)."""
    return (
        f"{_INTRO}{text} Your code should pass these tests:\n\n" + "\n".join(t.strip() for t in tests) + "\n"
    )


def with_few_shot_prompt(problem: Problem, shots: int = 3) -> Problem:
    """``problem`` asked with the MBPP paper's standard few-shot prompt (``mbpp_few_shot_prompt``), as a
    statement: what ``evaluate --prompt few-shot`` and few-shot benchmark slices while training send."""
    prompt = mbpp_few_shot_prompt(problem, shots)
    return problem.model_copy(update={"prompt": prompt, "prompt_is_code": False})


def mbpp_few_shot_prompt(problem: Problem, shots: int = 3) -> str:
    """The MBPP paper's few-shot prompt: ``shots`` solved tasks (2, 3, 4), then ``problem`` and ``[BEGIN]``.

    A model continues after ``[BEGIN]`` and is expected to stop at ``[DONE]``.
    """
    if not 0 <= shots <= len(FEW_SHOT_TASKS):
        raise ValueError(f"shots must be between 0 and {len(FEW_SHOT_TASKS)}, got {shots}")
    examples = [
        f"{mbpp_prompt(text, tests)}[BEGIN]\n{code}\n[DONE]\n" for text, code, tests in FEW_SHOT_TASKS
    ]
    return "".join(examples[:shots]) + problem.prompt + "[BEGIN]\n"
