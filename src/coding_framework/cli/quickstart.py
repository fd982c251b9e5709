"""`coding-framework quickstart`: the main job of `make quickstart` (embedded model, baseline, GRPO, eval)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from coding_framework.cli.app import app
from coding_framework.cli.output import fail, print_result_line


@app.command()
def quickstart(
    seed: Annotated[
        int | None, typer.Option(help="Seeds problem order, sampling and updates (default: the config's).")
    ] = None,
    run_dir: Annotated[
        Path | None, typer.Option(help="Run directory (default: runs/quickstart-seed<N>-<time>).")
    ] = None,
    config: Annotated[
        str | None,
        typer.Option(help="Training YAML: a path or a shipped name (default: shipped quickstart)."),
    ] = None,
    progress: Annotated[bool, typer.Option(help="Show progress bars (stderr).")] = True,
    results_dir: Annotated[
        Path | None,
        typer.Option(help="Also file the summary, with the machine, load and model sha256, as "
                     "DIR/<build>/seed<N>.json (the filed seeds: benchmarks/results/quickstart)."),
    ] = None,
) -> None:
    """Bootstrap the embedded model, measure held-out pass@1, train with GRPO, measure again.

    Prints a before/after table, writes the report, the MLflow run and the registered model; the last
    stdout line is JSON with baseline_pass@1, trained_pass@1, heldout_problems, seconds, mlflow_run_id.
    """
    from rich.console import Console

    from coding_framework.config import ConfigError
    from coding_framework.evaluation.machine import LoadMonitor
    from coding_framework.llm.base import EngineError
    from coding_framework.sandbox import BackendUnavailable
    from coding_framework.training.quickstart import (
        default_run_dir,
        file_result,
        quickstart_config,
        run_quickstart,
    )
    from coding_framework.training.run.checkpoint import CheckpointError
    from coding_framework.training.run.setup import starting_model

    try:
        cfg = quickstart_config(config, seed)
        with LoadMonitor() as load:
            result = run_quickstart(cfg, run_dir or default_run_dir(cfg.seed), progress=progress)
        if results_dir is not None:
            model_dir = starting_model(cfg, progress=False).model_dir
            assert model_dir is not None  # the trainer refuses endpoints
            filed = file_result(result, results_dir, model_dir, load)
    except (ConfigError, CheckpointError, EngineError, BackendUnavailable, OSError, ValueError) as exc:
        fail(str(exc))
    console = Console()
    console.print(result.table())
    console.print(
        f"report: {result.training.report.get('html')}   mlflow run: {result.mlflow_run_id}",
        markup=False,
        highlight=False,
    )
    summary = result.summary()
    print_result_line(summary if results_dir is None else summary | {"result_file": str(filed)})
