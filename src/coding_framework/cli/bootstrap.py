"""`coding-framework bootstrap-model`: install (or build) the embedded default model into the cache."""

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
    force: bool = typer.Option(
        False, help="Build the recipe on this machine (about 10 minutes on 2 cores) instead of installing "
        "the shipped reference build, even when the cache already holds it."
    ),
) -> None:
    """Put the embedded model in the cache with no downloads and print its directory.

    The shipped recipe installs the reference build that comes with the package (the same weights on every
    machine); another recipe, or --force, builds here. The cache lives in $CODING_FRAMEWORK_CACHE or the
    user cache dir. The last stdout line is a JSON object: the path, whether it is the reference build,
    and, for a build of the reference's recipe, whether this machine's weights equal the reference's.
    """
    from coding_framework.config import ConfigError, load_config, shipped_config
    from coding_framework.config.embedded import EmbeddedModelConfig
    from coding_framework.embedded import ensure_embedded_model
    from coding_framework.embedded.bootstrap import REPORT_FILE, training_problems
    from coding_framework.embedded.reference import WEIGHT_FILES, reference_mismatches, reference_name

    try:
        model_config = load_config(
            EmbeddedModelConfig, config if config is not None else shipped_config("embedded_model")
        )
    except ConfigError as exc:
        fail(str(exc))
    problems = training_problems(model_config)
    try:
        path = ensure_embedded_model(model_config, force=force)
    except (OSError, ValueError) as exc:
        fail(f"could not build the embedded model: {exc}")
    report = json.loads((path / REPORT_FILE).read_text())
    line = {"path": str(path), "reference": path.name == reference_name(model_config, problems)}
    if force and reference_name(model_config, problems) is not None:
        line["equals_reference"] = not reference_mismatches(path, only=WEIGHT_FILES)
    print_result_line(line | {"build_wall_time_s": report["wall_time_s"], "sft": report["sft"]})
