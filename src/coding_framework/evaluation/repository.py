"""Evaluation on repository tasks: episodes of the repository graph, graded by their hidden tests.

A repository benchmark is ``minirepo:SPLIT`` (the shipped mini-repository set: train, validation or test)
or ``swebench:FILE`` (SWE-bench's JSONL rows over local snapshots, see ``repotasks.swebench``). Each task
runs ``n_samples`` episodes; each episode ends in the graph's own grading (``graphs.repository``: the
hidden tests in the hardened repository tier), so a sample is resolved exactly when the graph says so.

One record per sample (:func:`sample_record`) carries the verdict (resolved, reward, FAIL_TO_PASS and
PASS_TO_PASS counts, refused edits, the first failing tests, tier), how the episode went (turns, tool calls
by kind, tool errors, parse failures, stop reason, tokens, seconds) and the agent's changes as a unified
diff (``model_patch``, as in SWE-bench's predictions files). :class:`RepoEvaluationReport` sums them up:
resolved rate, unbiased pass@k over tasks, mean turns, tool calls by kind, parse failures (count and share
of turns), infrastructure errors and request failures.

Grading needs hidden tests this grader can run (plain pytest-style test functions); every task is checked
before the first episode starts, so a set it cannot grade fails at once, naming the task.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import whatthepatch
from langgraph.graph.state import CompiledStateGraph
from pydantic import Field

from coding_framework.evaluation.episodes import pass_at_k_by_task
from coding_framework.evaluation.report import SampleReport
from coding_framework.evaluation.traces import TraceRecorder
from coding_framework.grading import Grader
from coding_framework.grading.repository import TIER, RepositoryTestError, grade_repositories, hidden_suite
from coding_framework.graphs.repository import RepoEpisodeState, tool_counts, workspace_of
from coding_framework.llm.base import REQUEST_FAILED, RequestFailed
from coding_framework.llm.sampling import row_seed
from coding_framework.logs import get_logger
from coding_framework.repotasks.task import PatchError, RepoTask, apply_patch

log = get_logger(__name__)

REPO_BENCHMARKS = ("minirepo", "swebench")
Record = dict[str, Any]


class RepoBenchmarkError(ValueError):
    """A repository benchmark that cannot be loaded or graded; the message says which and why."""


def is_repository_benchmark(benchmark: str) -> bool:
    """Whether ``benchmark`` (``NAME`` or ``NAME:SPLIT_OR_FILE``) names a repository benchmark."""
    return benchmark.partition(":")[0] in REPO_BENCHMARKS


def load_repo_tasks(
    benchmark: str, *, split: str | None = None, data: str | Path | None = None,
    repos_dir: str | Path | None = None, limit: int | None = None,
) -> tuple[str, list[RepoTask]]:
    """The benchmark's name as reported and its tasks (the first ``limit`` of them), each checked gradable.

    ``minirepo:SPLIT`` (or ``minirepo`` with ``split``) reads the shipped set, or the set file ``data``.
    ``swebench:FILE`` (or ``swebench`` with ``data``) reads SWE-bench JSONL rows whose snapshots are under
    ``repos_dir`` (default: the ``repos`` folder beside FILE).
    """
    name, _, rest = benchmark.partition(":")
    if name == "minirepo":
        from coding_framework.repotasks.minirepo import load_minirepos

        chosen = rest or (split if split not in (None, "all") else None)
        if not chosen:
            raise RepoBenchmarkError("minirepo takes a split: minirepo:train, minirepo:validation or "
                                     "minirepo:test")
        tasks, label = load_minirepos(chosen, path=data), f"minirepo:{chosen}"
    elif name == "swebench":
        from coding_framework.repotasks.swebench import load_swebench

        file = Path(rest) if rest else Path(data) if data is not None else None
        if file is None:
            raise RepoBenchmarkError("swebench takes its JSONL file: swebench:path/to/tasks.jsonl")
        folder = Path(repos_dir) if repos_dir is not None else file.parent / "repos"
        tasks, label = load_swebench(file, folder), f"swebench:{file}"
    else:
        raise RepoBenchmarkError(
            f"{benchmark!r} is not a repository benchmark ({', '.join(REPO_BENCHMARKS)})"
        )
    if limit is not None:
        if limit < 1:
            raise RepoBenchmarkError(f"limit must be at least 1, got {limit}")
        tasks = tasks[:limit]
    if not tasks:
        raise RepoBenchmarkError(f"{label} has no tasks to evaluate")
    check_gradable(tasks)
    return label, tasks


def check_gradable(tasks: Sequence[RepoTask]) -> None:
    """Raise RepoBenchmarkError when a task's hidden tests are not ones the hardened repository tier runs."""
    for task in tasks:
        try:
            hidden_suite(task)
        except RepositoryTestError as exc:
            raise RepoBenchmarkError(
                f"{exc} ({TIER} grades plain pytest-style test functions; a real SWE-bench instance needs "
                "its own Docker image)"
            ) from None


def _episode(state: Mapping[str, Any]) -> Record:
    """How an episode went, from its (final or last) graph state."""
    exchanges = state.get("exchanges", [])
    calls = tool_counts(exchanges)
    parse_failures = calls.pop("parse_error", 0)
    return {
        "turns": len(exchanges),
        "tool_calls": dict(sorted(calls.items())),
        "tool_errors": sum(1 for e in exchanges if e["tool"] is not None and not e["ok"]),
        "parse_failures": parse_failures,
        "tokens": state.get("tokens_used", 0),
    }


def sample_record(task: RepoTask, sample: int, state: Mapping[str, Any], seconds: float) -> Record:
    """One sample's record from the repository graph's final state."""
    verdict = state["verdict"]
    return {
        "instance_id": task.instance_id,
        "sample": sample,
        "resolved": bool(verdict["resolved"]),
        "reward": verdict["reward"],
        "fail_to_pass": verdict["fail_to_pass"],
        "pass_to_pass": verdict["pass_to_pass"],
        **_episode(state),
        "stop_reason": state.get("stop_reason"),
        "refused": verdict["refused"],
        "status": verdict["status"],
        "failures": verdict["failures"],
        "infrastructure_error": verdict["infrastructure_error"],
        "tier": verdict["tier"],
        "seconds": round(seconds, 3),
        "difficulty": task.difficulty,
        "model_patch": workspace_of(cast(RepoEpisodeState, state)).diff(),
    }


def failed_record(task: RepoTask, sample: int, error: str, seconds: float,
                  state: Mapping[str, Any] | None = None) -> Record:
    """The record of an episode whose model request failed alone: unresolved and not graded; its turns
    before the failure (``state``, the last graph state) are counted."""
    state = state or {}
    return {
        "instance_id": task.instance_id, "sample": sample, "resolved": False, "reward": 0.0,
        "fail_to_pass": [0, len(task.FAIL_TO_PASS)], "pass_to_pass": [0, len(task.PASS_TO_PASS)],
        **_episode(state), "stop_reason": REQUEST_FAILED, "refused": [], "status": "not_graded",
        "failures": [], "infrastructure_error": False, "tier": TIER, "seconds": round(seconds, 3),
        "difficulty": task.difficulty,
        "model_patch": workspace_of(cast(RepoEpisodeState, state)).diff() if "task" in state else "",
        "error": error,
    }


def jobs_for(tasks: Sequence[RepoTask], n_samples: int) -> list[tuple[RepoTask, int]]:
    """(task, sample index) per episode: each task ``n_samples`` times in a row, tasks in order. Episode
    ``i`` of this list is seeded ``row_seed(seed, i)``, so the order is part of every reported number."""
    if n_samples < 1:
        raise ValueError(f"need at least 1 sample per task, got {n_samples}")
    return [(task, j) for task in tasks for j in range(n_samples)]


async def run_episodes(
    graph: CompiledStateGraph,
    jobs: Sequence[tuple[RepoTask, int]],
    *,
    concurrency: int,
    seed: int | None = None,
    on_done: Callable[[Record], None] | None = None,
    finished: dict[int, Record] | None = None,
    traces: TraceRecorder | None = None,
) -> list[Record]:
    """Run one episode of ``graph`` per job (``concurrency`` at once); records in job order. A model request
    that fails alone (``RequestFailed``) fails its sample only, its earlier turns counted; ``finished`` gets
    each record under its index as it ends, so a caller keeps them when another error stops the run.
    ``traces`` records every episode as an MLflow trace."""
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int, task: RepoTask, sample: int) -> Record:
        inputs: dict[str, Any] = {"task": task.model_dump()}
        if seed is not None:
            inputs["seed"] = row_seed(seed, i)
        state: dict[str, Any] = {}
        async with gate:
            start = time.perf_counter()
            try:
                # Streamed, so an episode whose request fails keeps its earlier turns; the last is final.
                async for values in graph.astream(inputs, stream_mode="values"):
                    state = values
                record = sample_record(task, sample, state, time.perf_counter() - start)
                if traces is not None:
                    traces.submit(state, kind="repository", mode="evaluation", tags={"sample": str(sample)})
            except RequestFailed as exc:
                log.warning("repository_episode_request_failed", instance_id=task.instance_id, error=str(exc))
                record = failed_record(task, sample, str(exc), time.perf_counter() - start, state)
        if finished is not None:
            finished[i] = record
        if on_done is not None:
            on_done(record)
        return record

    return list(await asyncio.gather(*(one(i, task, sample) for i, (task, sample) in enumerate(jobs))))


@contextmanager
def episode_progress(total: int) -> Iterator[Callable[[Record], None]]:
    """A callback to pass as ``on_done``: a bar on a terminal, else one line per finished episode on stderr
    (a log file or pipe would show a bar only at its end)."""
    from rich.console import Console
    from rich.progress import Progress

    console = Console(stderr=True)
    if console.is_terminal:
        with Progress(console=console, transient=False) as bar:
            task = bar.add_task("episodes", total=total)
            yield lambda _record: bar.advance(task)
        return
    start = time.perf_counter()
    done = resolved = 0

    def line(record: Record) -> None:
        nonlocal done, resolved
        done += 1
        resolved += record["resolved"]
        verdict = "resolved" if record["resolved"] else "unresolved"
        console.print(
            f"episode {done}/{total}: {record['instance_id']} {verdict} in {record['turns']} turn(s) "
            f"({record['stop_reason']}); {resolved} resolved so far, {time.perf_counter() - start:.0f} s",
            highlight=False, soft_wrap=True,
        )

    yield line


class RepoEvaluationReport(SampleReport):
    """A model's episodes on a repository benchmark, graded by the hidden tests (see the module docstring)."""

    benchmark: str
    tier: str = Field(TIER, description="The grading tier of every verdict.")
    tasks: int
    n_samples: int
    resolved_rate: float = Field(description="Share of samples whose hidden tests all pass.")
    pass_at_k: dict[str, float] = Field(description="Unbiased pass@k over tasks (resolved = passed).")
    mean_reward: float = Field(description="Mean training reward: F2P share times P2P share kept.")
    by_difficulty: dict[str, float] = Field(description="Resolved rate per task difficulty.")
    mean_turns: float
    tool_calls: dict[str, int] = Field(description="Parsed tool calls by tool, over all samples.")
    tool_errors: int = Field(description="Parsed tool calls whose tool answered with an error.")
    parse_failures: int = Field(description="Turns whose answer held no usable tool call.")
    parse_failure_share: float = Field(description="parse_failures over all turns.")
    stop_reasons: dict[str, int]
    refused_edit_samples: int = Field(description="Samples with an edit the grader refused (tests, config).")
    infrastructure_errors: int = Field(description="Samples whose grading hit a sandbox infrastructure "
                                       "error.")
    request_failures: int = Field(description="Samples whose model request failed alone (not graded).")
    mean_tokens: float
    wall_s: float
    samples: list[Record] = Field(description="One record per sample, tasks in order (see sample_record).")

    def result_line(self) -> dict[str, Any]:
        """What ``evaluate`` prints last: pass@k at the top level, as for function-level benchmarks."""
        summary = self.summary()
        return {**summary.pop("pass_at_k"), **summary}


def _pass_at_k(records: Sequence[Record], ks: Sequence[int]) -> dict[str, float]:
    return pass_at_k_by_task((r["instance_id"] for r in records), (r["resolved"] for r in records), ks)


def report_for(benchmark: str, tasks: int, n_samples: int, records: Sequence[Record], wall_s: float,
               ks: Sequence[int] = (1, 10, 100)) -> RepoEvaluationReport:
    """Sum up per-sample records (at least one) into the report."""
    if not records:
        raise ValueError("no samples to report on")
    n = len(records)
    turns = sum(r["turns"] for r in records)
    calls: Counter[str] = Counter()
    difficulty: dict[str, list[bool]] = defaultdict(list)
    for r in records:
        calls.update(r["tool_calls"])
        difficulty[r["difficulty"]].append(r["resolved"])
    parse_failures = sum(r["parse_failures"] for r in records)
    return RepoEvaluationReport(
        benchmark=benchmark,
        tasks=tasks,
        n_samples=n_samples,
        resolved_rate=sum(r["resolved"] for r in records) / n,
        pass_at_k=_pass_at_k(records, ks),
        mean_reward=sum(r["reward"] for r in records) / n,
        by_difficulty={d: sum(v) / len(v) for d, v in sorted(difficulty.items())},
        mean_turns=turns / n,
        tool_calls=dict(sorted(calls.items())),
        tool_errors=sum(r["tool_errors"] for r in records),
        parse_failures=parse_failures,
        parse_failure_share=parse_failures / turns if turns else 0.0,
        stop_reasons=dict(sorted(Counter(str(r["stop_reason"]) for r in records).items())),
        refused_edit_samples=sum(bool(r["refused"]) for r in records),
        infrastructure_errors=sum(bool(r["infrastructure_error"]) for r in records),
        request_failures=sum(r["stop_reason"] == REQUEST_FAILED for r in records),
        mean_tokens=sum(r["tokens"] for r in records) / n,
        wall_s=round(wall_s, 3),
        samples=list(records),
    )


def read_predictions(path: str | Path, tasks: Sequence[RepoTask]) -> list[tuple[RepoTask, str]]:
    """SWE-bench-style predictions, one JSON object per line with ``instance_id`` and ``model_patch`` (a
    unified diff; other keys such as ``model_name_or_path`` are ignored), in file order, with their tasks."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RepoBenchmarkError(f"cannot read the predictions file {path}: {exc}") from None
    by_id = {task.instance_id: task for task in tasks}
    out = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path} line {lineno}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise RepoBenchmarkError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(row, dict) or not isinstance(row.get("model_patch"), str):
            raise RepoBenchmarkError(
                f"{where}: expected an object with instance_id and model_patch (a string)"
            )
        task = by_id.get(str(row.get("instance_id")))
        if task is None:
            raise RepoBenchmarkError(
                f"{where}: unknown instance_id {row.get('instance_id')!r} for this benchmark"
            )
        out.append((task, row["model_patch"]))
    if not out:
        raise RepoBenchmarkError(f"{path} holds no predictions")
    return out


def grade_patches(
    grader: Grader, items: Sequence[tuple[RepoTask, str]], progress: bool = False
) -> list[Record]:
    """Grade each patch (a unified diff) on its task's snapshot; records in input order. A patch that does not
    apply is unresolved (status ``patch_failed``), as in SWE-bench's harness."""
    applied: list[tuple[int, RepoTask, dict[str, str]]] = []
    records: list[Record | None] = []
    for i, (task, patch) in enumerate(items):
        try:
            applied.append((i, task, apply_patch(task.files, patch)))
            records.append(None)
        except (PatchError, whatthepatch.exceptions.WhatThePatchException) as exc:
            records.append({
                "instance_id": task.instance_id, "resolved": False, "reward": 0.0,
                "fail_to_pass": [0, len(task.FAIL_TO_PASS)], "pass_to_pass": [0, len(task.PASS_TO_PASS)],
                "refused": [], "status": "patch_failed", "infrastructure_error": False, "tier": TIER,
                "failures": [f"the patch does not apply: {exc}"],
            })
    verdicts = grade_repositories(grader, [(task, files) for _, task, files in applied],
                                  progress="grading" if progress else False)
    for (i, _, _), verdict in zip(applied, verdicts, strict=True):
        record = verdict.as_dict()
        records[i] = {key: record[key] for key in (
            "instance_id", "resolved", "reward", "fail_to_pass", "pass_to_pass", "refused", "status",
            "infrastructure_error", "tier", "failures")}
    return [r for r in records if r is not None]


def patch_summary(benchmark: str, records: Sequence[Record], ks: Sequence[int] = (1, 10, 100)) -> Record:
    """The result line of graded patches: pass@k at the top level, the resolved rate and the tier."""
    n = len(records)
    return {
        **_pass_at_k(records, ks),
        "benchmark": benchmark,
        "tier": TIER,
        "tasks": len({r["instance_id"] for r in records}),
        "samples": n,
        "resolved_rate": sum(r["resolved"] for r in records) / n,
        "mean_reward": sum(r["reward"] for r in records) / n,
        "patch_failures": sum(r["status"] == "patch_failed" for r in records),
        "refused_edit_samples": sum(bool(r["refused"]) for r in records),
        "infrastructure_errors": sum(bool(r["infrastructure_error"]) for r in records),
    }


__all__ = [
    "REPO_BENCHMARKS", "REQUEST_FAILED", "RepoBenchmarkError", "RepoEvaluationReport", "check_gradable",
    "episode_progress", "failed_record", "grade_patches", "is_repository_benchmark", "jobs_for",
    "load_repo_tasks", "patch_summary", "read_predictions", "report_for", "run_episodes", "sample_record",
]
