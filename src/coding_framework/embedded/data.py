"""SFT examples in exactly the Generator's format: ``generation_messages`` -> the answer in a python block.

A share of the examples are revisions: the first answer was a mutant of a reference, the user turn is
``revision_messages`` with the real grader's verdict, and the target is a correct reference. Another share
are habits: a first draft whose answer prints its result instead of returning it. Loss is on the target
answer (and its end-of-turn token) only.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from coding_framework.config.sandbox import ResourceLimits, SandboxConfig
from coding_framework.embedded.mutate import mutate, print_instead_of_return
from coding_framework.grading import Grader
from coding_framework.problems.problem import Problem
from coding_framework.problems.prompts import format_answer, generation_messages, revision_messages

ExampleKind = Literal["generation", "revision", "habit"]


@dataclass(frozen=True)
class SFTExample:
    """``input_ids`` and ``loss_mask`` align; mask 1 marks the tokens the model learns to produce."""

    input_ids: list[int]
    loss_mask: list[int]
    kind: ExampleKind
    task_id: str


@dataclass(frozen=True)
class _Revision:
    problem: Problem
    wrong: str
    feedback: str
    target: str


def answer_code(solution: str) -> str:
    """A reference program as the model should write it: docstrings dropped (the prompt already has them)."""
    try:
        tree = ast.parse(solution)
    except SyntaxError:
        return solution.strip() + "\n"
    drop: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and len(node.body) > 1:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                drop.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    lines = [ln for i, ln in enumerate(solution.splitlines(), start=1) if i not in drop]
    return "\n".join(lines).strip() + "\n"


def pretraining_text(problem: Problem) -> str:
    """A problem's reference programs as one plain-code document: the first whole, the others as answers.

    The later ones repeat the signature without the docstring, as the answer repeats the prompt's, so
    the document teaches the copying the answers need.
    """
    first, *others = problem.solutions
    return "\n\n".join([first.strip(), *(answer_code(s).strip() for s in others)]) + "\n"


def encode_example(
    tokenizer: Any, messages: list[dict[str, str]], answer: str, kind: ExampleKind, task_id: str
) -> SFTExample:
    """Prompt ids (template + generation prompt, mask 0) then the answer and EOS (mask 1)."""
    prompt = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    answer_ids = tokenizer(format_answer(answer), add_special_tokens=False)["input_ids"] + [
        tokenizer.eos_token_id
    ]
    return SFTExample(
        input_ids=[*prompt_ids, *answer_ids],
        loss_mask=[0] * len(prompt_ids) + [1] * len(answer_ids),
        kind=kind,
        task_id=task_id,
    )


def generation_examples(tokenizer: Any, problems: Sequence[Problem]) -> list[SFTExample]:
    return [
        encode_example(tokenizer, generation_messages(p), answer_code(s), "generation", p.task_id)
        for p in problems
        for s in p.solutions
    ]


def revision_examples(tokenizer: Any, problems: Sequence[Problem], count: int, seed: int) -> list[SFTExample]:
    """``count`` revision examples whose wrong attempts really fail (graded in the sandbox)."""
    rng = random.Random(seed)
    with_refs = [p for p in problems if p.solutions]
    if count <= 0 or not with_refs:
        return []
    drafts: list[tuple[Problem, str, str]] = []
    for _ in range(count * 2):  # about half the mutants are equivalent, time out, or cannot be made
        problem = rng.choice(with_refs)
        wrong = mutate(answer_code(rng.choice(problem.solutions)), rng)
        if wrong is not None:
            drafts.append((problem, wrong, answer_code(rng.choice(problem.solutions))))
    revisions = _graded(drafts, count)
    return [
        encode_example(
            tokenizer,
            [
                *generation_messages(r.problem),
                {"role": "assistant", "content": format_answer(r.wrong)},
                *revision_messages(r.problem, r.wrong, r.feedback),
            ],
            r.target,
            "revision",
            r.problem.task_id,
        )
        for r in revisions
    ]


def habit_examples(tokenizer: Any, problems: Sequence[Problem], count: int, seed: int) -> list[SFTExample]:
    """``count`` first drafts whose answer is a reference that prints its result instead of returning it.

    A code LM trained on real-world code brings habits of script code that fail tests; SFT data made of
    verified references alone leaves RL nothing of that kind to unlearn. Each habit draft really fails in
    the sandbox, and differs from its reference only in ``return`` -> ``print``: names and constants are
    the prompt's, so it teaches copying as much as a reference does.
    """
    rng = random.Random(f"habits:{seed}")
    with_refs = [p for p in problems if p.solutions]
    drafts: list[tuple[Problem, str, str]] = []
    for _ in range(count * 2 if with_refs else 0):
        problem = rng.choice(with_refs)
        target = answer_code(rng.choice(problem.solutions))
        habit = print_instead_of_return(target)
        if habit is not None:
            drafts.append((problem, habit, target))
    return [
        encode_example(tokenizer, generation_messages(r.problem), r.wrong, "habit", r.problem.task_id)
        for r in _graded(drafts, count)
    ]


def _graded(drafts: list[tuple[Problem, str, str]], count: int) -> list[_Revision]:
    """The first ``count`` drafts that fail or raise; timeouts and crashes are dropped (they depend on load).

    Drafts are graded in chunks of about what is still needed, so the surplus is rarely run.
    """
    config = SandboxConfig(limits=ResourceLimits(timeout_s=2.0))
    kept: list[_Revision] = []
    start = 0
    with Grader(config) as grader:
        while len(kept) < count and start < len(drafts):
            chunk = drafts[start : start + count - len(kept) + 64]
            start += len(chunk)
            results = grader.grade_many([(p, wrong) for p, wrong, _ in chunk])
            kept += [
                _Revision(problem=p, wrong=wrong, feedback=res.summary, target=target)
                for (p, wrong, target), res in zip(chunk, results, strict=True)
                if res.status in ("failed", "error")
            ]
    return kept[:count]
