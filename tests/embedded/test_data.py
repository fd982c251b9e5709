"""SFT examples: the Generator's exact format, loss on the answer only, graded revision examples."""

from __future__ import annotations

import random

import pytest

from coding_framework.embedded.data import (
    answer_code,
    encode_example,
    generation_examples,
    habit_examples,
    pretraining_text,
    revision_examples,
)
from coding_framework.embedded.mutate import mutate, print_instead_of_return
from coding_framework.embedded.tokenizer import tokenizer_from_texts
from coding_framework.problems import Problem
from coding_framework.problems.prompts import format_answer, generation_messages

PROMPT = 'def add_7(xs: list[int]) -> list[int]:\n    """Return xs with 7 added to each element."""\n'
PROBLEM = Problem(
    task_id="synthetic/add/0",
    prompt=PROMPT,
    entry_point="add_7",
    test_code="assert add_7([1, 2]) == [8, 9]\nassert add_7([]) == []\nassert add_7([-7]) == [0]\n",
    solutions=[
        PROMPT + "    return [x + 7 for x in xs]\n",
        PROMPT + "    return list(map(lambda x: x + 7, xs))\n",
    ],
)


@pytest.fixture(scope="module")
def tok():
    return tokenizer_from_texts([PROMPT, *PROBLEM.solutions] * 20, vocab_size=400)


def test_answer_code_drops_docstrings_only() -> None:
    assert (
        answer_code(PROBLEM.solutions[0])
        == "def add_7(xs: list[int]) -> list[int]:\n    return [x + 7 for x in xs]\n"
    )
    multi = 'import math\n\n\ndef f(x):\n    """Doc\n    more doc."""\n    return math.floor(x)\n'
    assert answer_code(multi) == "import math\n\n\ndef f(x):\n    return math.floor(x)\n"


def test_example_masks_exactly_the_answer_and_eos(tok) -> None:
    answer = answer_code(PROBLEM.solutions[0])
    ex = encode_example(tok, generation_messages(PROBLEM), answer, "generation", PROBLEM.task_id)
    assert len(ex.input_ids) == len(ex.loss_mask)
    n = sum(ex.loss_mask)
    assert ex.loss_mask == [0] * (len(ex.input_ids) - n) + [1] * n
    assert tok.decode(ex.input_ids[-n:]) == format_answer(answer) + tok.eos_token
    prompt = tok.apply_chat_template(generation_messages(PROBLEM), tokenize=False, add_generation_prompt=True)
    assert tok.decode(ex.input_ids[:-n]) == prompt


def test_one_generation_example_per_reference(tok) -> None:
    examples = generation_examples(tok, [PROBLEM])
    assert [e.kind for e in examples] == ["generation", "generation"]


def test_mutate_changes_one_token_and_keeps_the_signature() -> None:
    code = answer_code(PROBLEM.solutions[0])
    mutants = {mutate(code, random.Random(seed)) for seed in range(20)}
    assert code not in mutants and len(mutants) > 1
    for m in mutants:
        assert m.splitlines()[0] == code.splitlines()[0]
    assert mutate("def f(x):\n    return x\n", random.Random(0)) is None


def test_print_instead_of_return_changes_only_the_returns() -> None:
    code = "def f(x):\n    if x:\n        return [x + 7]\n    return (\n        x\n    )\n"
    assert print_instead_of_return(code) is None  # the second return continues on the next line
    code = "def f(x):\n    if x:\n        return [x + 7]\n    return []\n"
    assert print_instead_of_return(code) == "def f(x):\n    if x:\n        print([x + 7])\n    print([])\n"
    assert print_instead_of_return("def f(x):\n    x.append(1)\n") is None


def test_habit_examples_are_first_drafts_that_really_fail(tok) -> None:
    from coding_framework.grading import Grader

    examples = habit_examples(tok, [PROBLEM], count=2, seed=0)
    assert [e.kind for e in examples] == ["habit", "habit"]
    prompt = tok.apply_chat_template(generation_messages(PROBLEM), tokenize=False, add_generation_prompt=True)
    codes = []
    for ex in examples:
        n = sum(ex.loss_mask)
        assert tok.decode(ex.input_ids[:-n]) == prompt
        answer = tok.decode(ex.input_ids[-n:]).removesuffix(tok.eos_token)
        codes.append(answer.split("```python\n", 1)[1].rsplit("\n```", 1)[0] + "\n")
    refs = {answer_code(s) for s in PROBLEM.solutions}
    assert all(c.replace("print(", "return ", 1)[:-2] + "\n" in refs for c in codes)
    with Grader() as grader:
        assert not any(r.passed for r in grader.grade_many([(PROBLEM, c) for c in codes]))
    again = habit_examples(tok, [PROBLEM], count=2, seed=0)
    assert [e.input_ids for e in again] == [e.input_ids for e in examples]


def test_revision_examples_have_real_feedback_and_a_correct_target(tok) -> None:
    examples = revision_examples(tok, [PROBLEM], count=3, seed=0)
    assert len(examples) == 3
    for ex in examples:
        n = sum(ex.loss_mask)
        text = tok.decode(ex.input_ids[:-n])
        assert ex.kind == "revision"
        assert text.count("<|im_start|>assistant") == 2  # the wrong attempt, then the target's prompt
        assert "is wrong: failed" in text or "is wrong: error" in text
        target = tok.decode(ex.input_ids[-n:])
        assert target.removesuffix(tok.eos_token) in {
            format_answer(answer_code(s)) for s in PROBLEM.solutions
        }


def test_revision_examples_are_deterministic(tok) -> None:
    a = revision_examples(tok, [PROBLEM], count=2, seed=5)
    b = revision_examples(tok, [PROBLEM], count=2, seed=5)
    assert [e.input_ids for e in a] == [e.input_ids for e in b]


def test_pretraining_text_keeps_the_first_program_whole_and_repeats_the_signature() -> None:
    text = pretraining_text(PROBLEM)
    assert text.startswith(PROBLEM.solutions[0].strip())
    assert text.endswith(answer_code(PROBLEM.solutions[1]))
    assert text.count("def add_7(xs: list[int]) -> list[int]:") == 2
    assert text.count('"""') == 2  # one docstring, in the first program


def test_graded_keeps_the_first_failing_drafts_in_order_across_chunks() -> None:
    from coding_framework.embedded.data import _graded

    right = answer_code(PROBLEM.solutions[0])
    wrong = [right.replace("x + 7", f"x + {k}") for k in range(20)]
    drafts = [(PROBLEM, right, right)] * 100 + [(PROBLEM, w, right) for w in wrong[1:]]
    kept = _graded(drafts, count=3)  # the first chunk (67 drafts) holds no failure
    assert [r.wrong for r in kept] == wrong[1:4]
    assert all("failed" in r.feedback for r in kept)
    assert len(_graded(drafts[:105], count=50)) == 5  # fewer failing drafts than asked for
