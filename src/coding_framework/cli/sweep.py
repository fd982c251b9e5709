"""`coding-framework sweep`: a Ray Tune sweep over the RL trainer, with ASHA early stopping."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from coding_framework.cli.app import app
from coding_framework.cli.output import fail, print_result_line


@app.command()
def sweep(
    config: Annotated[
        str, typer.Option(help="Sweep YAML (SweepConfig): a path or a shipped name, e.g. sweep_basic.")
    ],
    run_dir: Annotated[
        Path, typer.Option(help="Where the trials' run directories, the MLflow store and Tune's state go.")
    ],
    progress: Annotated[bool, typer.Option(help="Show the trials' progress bar (stderr).")] = True,
    ray_address: Annotated[
        str | None,
        typer.Option(help="Join this Ray cluster (e.g. auto) instead of starting a local one of ray_cpus; "
                     "--run-dir must then be on storage every node shares."),
    ] = None,
) -> None:
    """Train one trial per sampled config; the last stdout line is a JSON object: trials and the best."""
    from coding_framework.config import ConfigError
    from coding_framework.config.sweep import load_sweep

    try:
        sweep_config, base = load_sweep(config)  # bad input fails here, before Ray and torch load
    except ConfigError as exc:
        fail(str(exc).replace("\n", " "))
    from coding_framework.training.sweep import SweepError, run_sweep

    try:
        results = run_sweep(sweep_config, base, run_dir, progress=progress, ray_address=ray_address)
    except ConfigError as exc:
        fail(str(exc).replace("\n", " "))
    except (SweepError, OSError) as exc:
        fail(str(exc), code=1)
    print_result_line(results.summary())
