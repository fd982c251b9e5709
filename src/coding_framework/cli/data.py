"""`coding-framework data stats|rank|filter|augment`: look at, rank, filter and augment problem sets.

Every command that writes problems writes a JSONL of problem records, which `--benchmark jsonl --data FILE`
reads back (here and in `evaluate`), and a PNG of the pass/kill-rate distributions next to it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from coding_framework.cli.app import app
from coding_framework.cli.common import (
    MODEL_HELP,
    model_flag,
    resolved_or_fail,
    sandbox_settings,
    workflow_config,
)
from coding_framework.cli.output import fail, print_result_line
from coding_framework.problems import BENCHMARKS

if TYPE_CHECKING:
    from coding_framework.problems import Problem

data_app = typer.Typer(
    help="Problem data: statistics, difficulty ranking, test-strength filtering, augmentation."
)
app.add_typer(data_app, name="data")

_Benchmark = Annotated[
    str, typer.Option(help=" | ".join(BENCHMARKS) + "; NAME:SPLIT names one split (mbpp:train).")
]
_Data = Annotated[
    Path | None, typer.Option(help="Local benchmark file or folder (a JSONL of problem records for `jsonl`).")
]
_Split = Annotated[str, typer.Option(help="Benchmark split (all, or one the benchmark has).")]


def _load(benchmark: str, data: Path | None, split: str) -> list[Problem]:
    from coding_framework.problems import ProblemLoadError, load_benchmark
    from coding_framework.problems.sources import resolve_source

    name, _, named_split = benchmark.partition(":")
    if named_split and split not in ("all", named_split):
        fail(f"--benchmark {benchmark} names split {named_split!r} and --split names {split!r}: pass one")
    try:
        problems = load_benchmark(name, resolve_source(name, data), named_split or split)
    except ProblemLoadError as exc:
        fail(str(exc))
    if not problems:
        fail(f"benchmark {benchmark!r} ({split}) has no problems")
    return problems


def _write(problems: list[Problem], out: Path, title: str) -> tuple[Path, Path | None]:
    from coding_framework.curation import plot_distributions
    from coding_framework.problems import write_problem_records

    if out.exists() and out.is_dir():
        fail(f"--out {out} is a folder; pass a file path such as {out / 'problems.jsonl'}")
    path = write_problem_records(problems, out)
    return path, plot_distributions(problems, out.with_suffix(".png"), title)


@data_app.command()
def stats(
    benchmark: Annotated[list[str], typer.Option(help="Benchmark(s), repeatable: " + " | ".join(BENCHMARKS))],
    data: Annotated[
        list[Path], typer.Option(help="Source per --benchmark, in the same order (omit to use each default).")
    ] = [],  # noqa: B006 (typer hands each call its own list)
    split: _Split = "all",
    min_kill_rate: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Count problems below this kill rate.")
    ] = 0.7,
) -> None:
    """Per-dataset counts, test counts, and pass-rate / kill-rate histograms where the records carry them."""
    from rich.console import Console
    from rich.table import Table

    from coding_framework.curation import dataset_stats

    if data and len(data) != len(benchmark):
        fail(f"give one --data per --benchmark ({len(benchmark)}), or none; got {len(data)}")
    sources: list[Path | None] = list(data) or [None] * len(benchmark)
    summary = {
        name: dataset_stats(_load(name, src, split), min_kill_rate)
        for name, src in zip(benchmark, sources, strict=True)
    }
    table = Table(
        "dataset", "problems", "tests (mean)", "ranked", "mean pass rate", "measured", "mean kill rate"
    )
    for name, s in summary.items():
        table.add_row(
            name,
            str(s["problems"]),
            f"{s['tests']['mean']:.1f}",
            str(s["ranked"]),
            f"{s['pass_rate']['mean']:.3f}" if "pass_rate" in s else "-",
            str(s["measured"]),
            f"{s['kill_rate']['mean']:.3f}" if "kill_rate" in s else "-",
        )
    Console(stderr=True).print(table)
    print_result_line(summary)


@data_app.command()
def rank(
    *,
    benchmark: _Benchmark,
    model: Annotated[str, typer.Option(help=f"The reference policy. {MODEL_HELP}")],
    n: Annotated[int, typer.Option("-n", "--n", min=1, help="Samples per problem.")] = 4,
    out: Annotated[Path, typer.Option(help="Where to write the ranked problem records (JSONL).")],
    data: _Data = None,
    split: _Split = "all",
    limit: Annotated[int | None, typer.Option(min=1, help="Only the first N problems.")] = None,
    rounds: Annotated[
        int, typer.Option(min=1, help="Workflow rounds per sample (1: single-draft pass rate).")
    ] = 1,
    temperature: Annotated[
        float | None,
        typer.Option(min=0.0, help="The sampling temperature (default: the agents config's); rank at the "
                     "temperature RL will sample at."),
    ] = None,
    max_new_tokens: Annotated[
        int | None, typer.Option(min=1, help="Most tokens per answer (default: the agents config's).")
    ] = None,
    keep_passing: Annotated[
        bool,
        typer.Option(help="Also store each distinct passing program on its problem, after the reference "
                     "solutions (what the Generator's warm start learns from)."),
    ] = False,
    seed: Annotated[int, typer.Option(help="Seeds the sampling.")] = 0,
) -> None:
    """Store each problem's empirical pass rate under MODEL (n samples each) and write them out."""
    from coding_framework.config import ConfigError
    from coding_framework.curation import with_pass_rates
    from coding_framework.llm.base import EngineError
    from coding_framework.sandbox import BackendUnavailable
    from coding_framework.supervisor import CodingSupervisor

    ref = model_flag(model)
    resolved = None if ref.is_endpoint else resolved_or_fail(ref)
    problems = _load(benchmark, data, split)[:limit]
    try:
        config = workflow_config(model=ref, max_rounds=rounds)
        config.sandbox = sandbox_settings(None)
        if temperature is not None:
            config.agents.generator.sampling.temperature = temperature
        if max_new_tokens is not None:
            config.agents.generator.sampling.max_new_tokens = max_new_tokens
        started = time.perf_counter()
        with CodingSupervisor(config, resolved=[resolved] if resolved else ()) as supervisor:
            report = supervisor.evaluate(problems, n_samples=n, seed=seed)
        outcomes = [(s["task_id"], s["passed"]) for s in report.samples]
        passing: dict[str, list[str]] = {}
        if keep_passing:
            by_id = {p.task_id: p for p in problems}
            for s in report.samples:
                if s["passed"]:
                    passing.setdefault(s["task_id"], []).append(by_id[s["task_id"]].completion_program(
                        s["completion"]))
        ranked = with_pass_rates(problems, outcomes, str(ref), passing)
    except (ConfigError, EngineError, BackendUnavailable, ValueError) as exc:
        fail(str(exc))
    path, plot = _write(ranked, out, benchmark)
    rates = [p.pass_rate or 0.0 for p in ranked]
    typer.echo(f"ranked {len(ranked)} problems x {n} samples -> {path} (plot: {plot})", err=True)
    print_result_line(
        {"benchmark": benchmark, "problems": len(ranked), "n": n, "model": model,
         "mean_pass_rate": sum(rates) / len(rates), "p0": sum(r == 0 for r in rates),
         "p_mixed": sum(0 < r < 1 for r in rates), "p1": sum(r == 1 for r in rates),
         "own_programs": sum(len(v) for v in passing.values()), "request_failures": report.request_failures,
         "seconds": round(time.perf_counter() - started, 1), "out": str(path), "plot": str(plot)}
    )  # fmt: skip


@data_app.command(name="filter")
def filter_(
    benchmark: _Benchmark,
    out: Annotated[
        Path, typer.Option(help="Where to write the problem records with their kill rates (JSONL).")
    ],
    data: _Data = None,
    split: _Split = "all",
    min_kill_rate: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Flag problems below this kill rate.")
    ] = 0.7,
    cap: Annotated[int, typer.Option(min=1, help="Most mutants per problem (a seeded draw).")] = 20,
    augment: Annotated[
        bool, typer.Option(help="Add differential asserts to flagged problems, then re-measure.")
    ] = False,
    drop: Annotated[bool, typer.Option(help="Leave the problems still flagged out of --out.")] = False,
    seed: Annotated[int, typer.Option(help="Seed of the mutant draw and of the generated inputs.")] = 0,
    workers: Annotated[
        int | None, typer.Option(min=1, help="Concurrent sandboxes (default: the sandbox config's).")
    ] = None,
    timeout: Annotated[
        float | None, typer.Option(help="Seconds per graded mutant (default: the sandbox config's).")
    ] = None,
) -> None:
    """Mutation-test every problem's tests with the grader; flag (and optionally strengthen) weak ones."""
    from coding_framework.config import ConfigError
    from coding_framework.curation import dataset_kill_rate, filter_by_strength
    from coding_framework.grading import Grader
    from coding_framework.sandbox import BackendUnavailable

    problems = _load(benchmark, data, split)
    try:
        sandbox = sandbox_settings(None, timeout=timeout, workers=workers)
        with Grader(sandbox) as grader:
            report = filter_by_strength(
                problems,
                grader,
                min_kill_rate=min_kill_rate,
                cap=cap,
                augment=augment,
                seed=seed,
                progress=True,
            )
    except (ConfigError, BackendUnavailable, ValueError) as exc:
        fail(str(exc))
    path, plot = _write(report.kept() if drop else report.problems, out, benchmark)
    typer.echo(
        f"{len(report.flagged)} of {len(problems)} problems flagged -> {path} (plot: {plot})", err=True
    )
    print_result_line(
        {
            "benchmark": benchmark,
            **dataset_kill_rate(report.strengths),
            "min_kill_rate": min_kill_rate,
            "flagged": report.flagged,
            "strengthened": {k: list(v) for k, v in report.strengthened.items()},
            "out": str(path),
            "plot": str(plot),
        }
    )


@data_app.command(name="augment")
def augment_(
    benchmark: _Benchmark,
    out: Annotated[
        Path, typer.Option(help="Where to write the originals and their augmented copies (JSONL).")
    ],
    data: _Data = None,
    split: _Split = "all",
    seed: Annotated[int, typer.Option(help="Copies are the same for the same seed.")] = 0,
    copies: Annotated[int, typer.Option(min=1, help="Augmented copies per problem.")] = 1,
    kinds: Annotated[
        str, typer.Option(help="Comma-separated: rename, reword, shuffle.")
    ] = "rename,reword,shuffle",
) -> None:
    """Add renamed / reworded / example-shuffled copies of code-prompt problems (built-in, synthetic)."""
    from coding_framework.problems import augment

    problems = _load(benchmark, data, split)
    chosen = [k.strip() for k in kinds.split(",") if k.strip()]
    try:
        grown = [augment(p, seed + c, chosen) for c in range(copies) for p in problems]
    except ValueError as exc:
        fail(str(exc))
    path, _ = _write([*problems, *grown], out, benchmark)
    typer.echo(f"{len(problems)} problems + {len(grown)} augmented copies -> {path}", err=True)
    print_result_line(
        {"benchmark": benchmark, "problems": len(problems), "augmented": len(grown), "out": str(path)}
    )
