"""The Reviewer's warm start: self-made review labels from real analysis and the grader, then SFT on them."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM

from coding_framework.agents.types import Execution
from coding_framework.config.graph import WorkflowConfig
from coding_framework.config.review_credit import ReviewWarmStartConfig
from coding_framework.llm.session import TokenSession
from coding_framework.testing.engine import ScriptedEngine, tiny_tokenizer
from coding_framework.testing.grader import InProcessGrader
from coding_framework.testing.models import tiny_model_dir
from coding_framework.training.review_sft import GraderReviewer, ReviewExample, review_dataset, review_sft
from coding_framework.training.sft import IGNORE, encode_turn
from tests.training._episodes import ADD, RIGHT, WRONG

SETTINGS = ReviewWarmStartConfig(enabled=True, samples=2, epochs=6, lr=1e-2, micro_batch_size=2)
FAILED = Execution(
    passed=False, status="failed", has_tests=True, tests_total=3, feedback="0/3 tests passed.",
    failures=["test 1 `assert add(1, 2) == 3` -> AssertionError", "test 2 `...` -> AssertionError"],
)


async def test_the_grader_reviewer_leads_with_every_failing_test_then_static_findings() -> None:
    review = await GraderReviewer().areview(ADD, "import os\ndef add(a, b):\n    return a - b\n", FAILED)
    lines = review.text.splitlines()
    assert lines[0] == "Static review:"
    assert lines[1].startswith("- [test] test 1") and lines[2].startswith("- [test] test 2")
    assert "F401" in review.text  # ruff's unused import, from the static reviewer's analysis
    crashed = Execution(passed=False, status="error", has_tests=True, feedback="SyntaxError: bad\nmore")
    bare = await GraderReviewer().areview(ADD, "def add(a, b):\n    return a - b\n", crashed)
    assert bare.text == "Static review:\n- [test] SyntaxError: bad"


def _respond(prompt: str) -> str:
    """Fix the draft after a review, otherwise draft wrong code."""
    return RIGHT if "is wrong" in prompt else WRONG


async def test_the_dataset_labels_each_review_by_what_the_revision_did() -> None:
    engine = ScriptedEngine(respond=_respond)
    examples = await review_dataset(engine, WorkflowConfig(), InProcessGrader(), [ADD], SETTINGS, seed=0)
    assert len(examples) == SETTINGS.samples
    first = examples[0]
    assert first.useful and first.revision_passed and (first.draft_tests, first.revision_tests) == (0, 3)
    assert first.review.startswith("Static review:\n- [test] test 1")
    request = first.messages[1]["content"]
    assert request.startswith("Problem:\n") and "return a - b" in request
    stuck = ScriptedEngine(respond=lambda prompt: WRONG)
    (unhelpful, _) = await review_dataset(stuck, WorkflowConfig(), InProcessGrader(), [ADD], SETTINGS, 0)
    assert not unhelpful.useful


def _example(review: str, useful: bool | int = True) -> ReviewExample:
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "return a - b"}]
    return ReviewExample(task_id="t", messages=messages, review=review, draft_tests=0,
                         revision_tests=3 if useful else 0, tests_total=3, revision_passed=bool(useful))


def test_only_the_reviews_tokens_are_labelled() -> None:
    tok = tiny_tokenizer()
    example = _example("- return a + b")
    ids, labels = encode_turn(tok, example.messages, example.review, max_answer_tokens=64)
    session = TokenSession(tok)
    session.add_messages(_example("").messages)
    session.add_generation_prompt()
    prompt = session.ids
    assert ids[: len(prompt)] == prompt and labels[: len(prompt)] == [IGNORE] * len(prompt)
    target = labels[len(prompt) :]
    assert target == ids[len(prompt) :] and IGNORE not in target
    review = tok("- return a + b", add_special_tokens=False)["input_ids"]
    assert target == [*review, tok.convert_tokens_to_ids("<|im_end|>")]
    _, short_labels = encode_turn(tok, example.messages, example.review, max_answer_tokens=2)
    assert short_labels[len(prompt) :] == [*review[:2], target[-1]]


@pytest.mark.slow
def test_sft_on_useful_reviews_lowers_their_loss_and_skips_the_rest(tmp_path) -> None:
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir(tmp_path / "tiny"), dtype=torch.float32)
    tok = tiny_tokenizer()
    ignored = {n: p.detach().clone() for n, p in model.named_parameters()}
    assert review_sft(model, tok, [_example("- x", useful=False)], SETTINGS, seed=0) == {
        "warm_start/sft_examples": 0.0}
    assert all(torch.equal(p, ignored[n]) for n, p in model.named_parameters())
    examples = [_example("- return a + b, not a - b"), _example("- the sign is wrong"), _example("- y", 0)]
    metrics = review_sft(model, tok, examples, SETTINGS, seed=0)
    assert metrics["warm_start/sft_examples"] == 2.0
    assert metrics["warm_start/loss_last_epoch"] < 0.75 * metrics["warm_start/loss_first_epoch"]
