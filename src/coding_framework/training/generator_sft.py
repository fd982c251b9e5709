"""The Generator's warm start: supervised fine-tuning on programs known to pass, before RL.

RL learns only from groups whose samples differ, and a small model passes almost none of a real training
set, so most groups are flat. Fine-tuning first on passing programs (the problems' reference solutions and
the policy's own passing samples: rejection-sampling fine-tuning) moves the policy to where RL has signal.
Each example is the Generator's own request (``problems.prompts.generation_messages``, rendered by the chat
template as a TokenSession renders it) answered by the program in a python block, the form
``agents.generator.code_from_answer`` reads. Only the answer's tokens carry loss.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import torch

from coding_framework.agents.generator import CodeGenerator
from coding_framework.config.warm_start import GeneratorWarmStartConfig
from coding_framework.llm.base import TokenEngine
from coding_framework.problems import Problem
from coding_framework.problems.prompts import generation_messages
from coding_framework.training.sft import (
    Row,
    encode_turn,
    fit_metrics,
    fit_role,
    gate_failure,
    progress_lines,
)

__all__ = ["WarmStartRejected", "answer_for", "sft_rows", "warm_start_generator"]


class WarmStartRejected(RuntimeError):
    """The warm start did not lower the held-out loss enough; the message gives both losses."""


def answer_for(program: str) -> str:
    return f"```python\n{program.strip()}\n```"


def sft_rows(tokenizer: object, problems: Sequence[Problem], settings: GeneratorWarmStartConfig) -> list[Row]:
    """One example per passing program (at most ``solutions_per_problem`` a problem, in the order the
    problem lists them); an answer past ``max_answer_tokens`` is left out, not cut."""
    rows = []
    for problem in problems:
        messages = generation_messages(problem)
        for program in problem.solutions[: settings.solutions_per_problem]:
            answer = answer_for(program)
            if _fits(tokenizer, answer, settings.max_answer_tokens):
                rows.append(encode_turn(tokenizer, messages, answer, settings.max_answer_tokens))
    return rows


def _fits(tokenizer: object, answer: str, limit: int) -> bool:
    return len(tokenizer(answer, add_special_tokens=False)["input_ids"]) <= limit  # type: ignore[operator]


def warm_start_generator(
    engine: TokenEngine,
    model: torch.nn.Module,
    problems: Sequence[Problem],
    heldout: Sequence[Problem],
    settings: GeneratorWarmStartConfig,
    seed: int,
    progress: bool = True,
) -> dict[str, float]:
    """Fine-tune the Generator on ``problems``' passing programs: its adapter when ``engine`` decodes
    through per-role adapters, else ``model``. Metrics under ``warm_start/``, the held-out loss before
    and after among them; ``WarmStartRejected`` when the gate (``max_heldout_loss_ratio``) fails."""
    started = time.perf_counter()
    tokenizer = engine.tokenizer
    rows = sft_rows(tokenizer, problems, settings)
    if not rows:
        raise WarmStartRejected("the warm start has no examples: no training problem carries a solution")
    held = sft_rows(tokenizer, heldout[: settings.heldout_limit], settings)
    losses, before, after = fit_role(engine, model, CodeGenerator.role, rows, held, settings, seed,
                                     progress_lines("warm start") if progress else None)
    metrics = fit_metrics(rows, held, losses, before, after, started)
    metrics["warm_start/problems"] = float(sum(bool(p.solutions) for p in problems))
    failure = gate_failure(before, after, settings.max_heldout_loss_ratio, "warm_start")
    if failure is not None:
        raise WarmStartRejected(failure)
    return metrics
