"""The tool-calling agent's warm start on repository tasks: supervised fine-tuning on gold demonstrations.

A model that never writes a parseable tool call earns reward 0 on every episode, so GRPO has no signal.
Each training task's demonstration is a scripted gold episode played through the real tools on a
Workspace: list the files, read the module the gold patch changes, apply the gold hunk
(``replace_in_file``, or ``write_file`` when the hunk's text is not unique), finish. The visible tests are
not run (that needs a sandbox per demonstration). The conversation is rendered exactly as a training
episode renders it (``agents.repository.opening_messages``, answers by ``render_call``, each tool's real
output by ``render_observation`` as a user message) through a TokenSession, one example per task, with loss
on the answers' tokens (and each turn's end token) only.
"""

from __future__ import annotations

import asyncio
import difflib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from coding_framework.agents.replay import RecordedTurn
from coding_framework.agents.repository import RepositoryAgent, opening_messages
from coding_framework.agents.tool_calls import ToolFormat, render_call, render_observation
from coding_framework.config.repository import RepositoryConfig
from coding_framework.config.warm_start import RepositoryWarmStartConfig
from coding_framework.llm.base import SamplingParams, TokenEngine
from coding_framework.llm.session import Message, TokenSession, inspect_template
from coding_framework.logs import get_logger
from coding_framework.repotasks.task import RepoTask
from coding_framework.training.sft import (
    IGNORE,
    Row,
    fit_metrics,
    fit_role,
    gate_failure,
    progress_lines,
)
from coding_framework.workspace import ToolBudget, ToolCall, ToolContext, Workspace, call_tool

__all__ = ["Demonstration", "RepositoryWarmStartRejected", "demonstration", "demonstration_rows",
           "encode_demonstration", "gold_calls", "warm_start_repository"]

log = get_logger(__name__)

_CONTEXT_LINES = 4
"""Lines read around a hunk when its file is too long for one observation."""


class RepositoryWarmStartRejected(ValueError):
    """The warm start had no examples or did not lower the held-out loss enough; the message says which."""


@dataclass(frozen=True)
class Demonstration:
    """One gold episode: the opening messages, then per turn the answer and the observation that followed
    (the last turn, ``finish``, has its observation too; nothing is trained on after it)."""

    opening: list[Message]
    answers: list[str]
    observations: list[str]


def _hunk(before: str, after: str) -> tuple[str, str, int, int] | None:
    """The one span covering every change from ``before`` to ``after`` as (old text, new text, first line,
    last line) of ``before`` (1-based), widened by unchanged lines until the old text is non-empty and
    occurs once in ``before``; None when no such span exists."""
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    changes = [op for op in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
               if op[0] != "equal"]
    if not changes:
        return None
    i1, i2, j1, j2 = changes[0][1], changes[-1][2], changes[0][3], changes[-1][4]
    while not "".join(old[i1:i2]) or before.count("".join(old[i1:i2])) != 1:
        if i1 > 0:  # the lines before the first change are equal in both: widen upwards first
            i1, j1 = i1 - 1, j1 - 1
        elif i2 < len(old):
            i2, j2 = i2 + 1, j2 + 1
        else:
            return None
    return "".join(old[i1:i2]), "".join(new[j1:j2]), i1 + 1, max(i2, i1 + 1)


def gold_calls(task: RepoTask, output_chars: int) -> list[ToolCall]:
    """The scripted gold policy: list the files; per file the gold patch changes, read it (the lines around
    the change when the whole file would not fit an observation of ``output_chars``) and apply the change;
    then finish."""
    fixed = task.fixed_files()
    calls = [ToolCall("list_files", {})]
    for path in sorted(p for p in fixed if task.files.get(p) != fixed[p]):
        before = task.files.get(path)
        hunk = _hunk(before, fixed[path]) if before is not None else None
        if hunk is None:
            calls.append(ToolCall("write_file", {"path": path, "content": fixed[path]}))
            continue
        old, new, first, last = hunk
        if len(Workspace({path: before}).read(path)) <= output_chars:  # type: ignore[dict-item]
            calls.append(ToolCall("read_file", {"path": path}))
        else:
            calls.append(ToolCall("read_file", {"path": path, "start": max(1, first - _CONTEXT_LINES),
                                                "end": last + _CONTEXT_LINES}))
        calls.append(ToolCall("replace_in_file", {"path": path, "old": old, "new": new}))
    calls.append(ToolCall("finish", {"summary": "fixed the issue in " + ", ".join(
        c.arguments["path"] for c in calls if c.name in ("replace_in_file", "write_file"))}))
    return calls


async def demonstration(task: RepoTask, config: RepositoryConfig, fmt: ToolFormat) -> Demonstration | None:
    """``gold_calls`` played through the real tools; None when a call fails or the workspace does not end
    as the gold patch leaves it (the demonstration would teach a wrong episode)."""
    ctx = ToolContext(Workspace(task.files), None, ToolBudget(config.output_chars, config.run_timeout_s))
    answers, observations = [], []
    for call in gold_calls(task, config.output_chars):
        obs = await call_tool(ctx, call, config.tools)
        if not obs.ok:
            log.warning("demonstration_dropped", task=task.instance_id, tool=call.name, error=obs.text)
            return None
        answers.append(render_call(call, fmt))
        observations.append(render_observation(obs.tool, obs.text, fmt))
    if ctx.workspace.files != task.fixed_files():
        log.warning("demonstration_dropped", task=task.instance_id, error="the workspace is not the gold fix")
        return None
    return Demonstration(opening_messages(task, config, fmt), answers, observations)


def encode_demonstration(tokenizer: Any, demo: Demonstration, role: str) -> Row:
    """The demonstration as a training episode's row holds it: each answer generated (its tokens and the
    token that ends the turn are the labels), each observation after it appended as a user message, up to
    the last answer."""
    session = TokenSession(tokenizer)
    session.add_messages(demo.opening)
    end = tokenizer(inspect_template(tokenizer).assistant_suffix, add_special_tokens=False)["input_ids"][:1]
    params = SamplingParams(role=role)
    for turn, (answer, observation) in enumerate(zip(demo.answers, demo.observations, strict=True)):
        session.add_generation_prompt()
        response = [*tokenizer(answer, add_special_tokens=False)["input_ids"], *end]
        record = {"prompt_ids": session.ids, "response_ids": response, "logprobs": [0.0] * len(response),
                  "text": answer, "stop_reason": "eos", "policy_version": "demonstration", "turn": turn}
        session.generate(RecordedTurn(record, tokenizer), params, role=role, turn=turn)
        if turn < len(demo.answers) - 1:
            session.add_messages([{"role": "user", "content": observation}])
    last = session.calls[-1]
    end_at = last.start + len(last.response_ids)  # an episode's row ends with its last answer
    ids = session.ids[:end_at]
    return ids, [t if m else IGNORE for t, m in zip(ids, session.loss_mask[:end_at], strict=True)]


def demonstration_rows(tokenizer: Any, tasks: Sequence[RepoTask], config: RepositoryConfig, fmt: ToolFormat,
                       role: str) -> tuple[list[Row], int]:
    """One row per task whose demonstration plays and fits ``config.max_tokens``; also how many were
    left out."""
    rows, dropped = [], 0
    for task in tasks:
        demo = asyncio.run(demonstration(task, config, fmt))
        row = encode_demonstration(tokenizer, demo, role) if demo is not None else None
        if row is None or len(row[0]) > config.max_tokens:
            dropped += 1
            continue
        rows.append(row)
    return rows, dropped


def warm_start_repository(
    engine: TokenEngine,
    model: torch.nn.Module,
    tasks: Sequence[RepoTask],
    heldout: Sequence[RepoTask],
    config: RepositoryConfig,
    settings: RepositoryWarmStartConfig,
    seed: int,
    progress: bool = True,
) -> dict[str, float]:
    """Fine-tune the tool-calling agent on gold demonstrations of ``tasks`` (the first ``max_examples``):
    its adapter when ``engine`` decodes through per-role adapters, else ``model``. Metrics under
    ``warm_start/``, the held-out demonstrations' loss before and after among them;
    ``RepositoryWarmStartRejected`` when the gate (``max_heldout_loss_ratio``) fails."""
    started = time.perf_counter()
    tokenizer = engine.tokenizer
    agent = RepositoryAgent(config, engine=engine)
    chosen = list(tasks)[: settings.max_examples]
    rows, dropped = demonstration_rows(tokenizer, chosen, config, agent.format, agent.role)
    if not rows:
        raise RepositoryWarmStartRejected(
            f"the warm start has no examples: none of {len(chosen)} training tasks' demonstrations played "
            "and fit workflow.repository.max_tokens")
    held, _ = demonstration_rows(tokenizer, list(heldout)[: settings.heldout_limit], config, agent.format,
                                 agent.role)
    losses, before, after = fit_role(engine, model, agent.role, rows, held, settings, seed,
                                     progress_lines("repository warm start") if progress else None)
    metrics = fit_metrics(rows, held, losses, before, after, started)
    metrics["warm_start/dropped"] = float(dropped)
    metrics["warm_start/tokens_mean"] = sum(len(ids) for ids, _ in rows) / len(rows)
    failure = gate_failure(before, after, settings.max_heldout_loss_ratio, "repository_warm_start")
    if failure is not None:
        raise RepositoryWarmStartRejected(failure)
    return metrics
