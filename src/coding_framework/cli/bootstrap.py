"""`coding-framework bootstrap-model`: build (or find in the cache) the embedded default model."""

from __future__ import annotations

import json

import typer

from coding_framework.cli.app import app
from coding_framework.cli.output import fail, print_result_line


@app.command("bootstrap-model")
def bootstrap_model(
    config: str | None = typer.Option(
        None, help="Model YAML: a path or a shipped name (default: shipped embedded_model)."
    ),
    force: bool = typer.Option(False, help="Rebuild even when the cache already holds this model."),
) -> None:
    """Build the embedded model with no downloads (a few minutes on CPU) and print its directory.

    The cache lives in $CODING_FRAMEWORK_CACHE or the user cache dir, keyed by a hash of the config.
    Prints a JSON object with the path and the build report as the last stdout line.
    """
    from coding_framework.config import ConfigError, load_config, shipped_config
    from coding_framework.config.embedded import EmbeddedModelConfig
    from coding_framework.embedded import ensure_embedded_model
    from coding_framework.embedded.bootstrap import REPORT_FILE

    try:
        model_config = load_config(
            EmbeddedModelConfig, config if config is not None else shipped_config("embedded_model")
        )
    except ConfigError as exc:
        fail(str(exc))
    try:
        path = ensure_embedded_model(model_config, force=force)
    except (OSError, ValueError) as exc:
        fail(f"could not build the embedded model: {exc}")
    report = json.loads((path / REPORT_FILE).read_text())
    print_result_line({"path": str(path), "build_wall_time_s": report["wall_time_s"], "sft": report["sft"]})
