"""`coding-framework serve`: the model server (OpenAI-compatible chat, /v1/solve, rollouts)."""

from __future__ import annotations

from typing import Annotated

import typer

from coding_framework.cli.main import app
from coding_framework.cli.output import fail

API_KEY_ENV = "CODING_FRAMEWORK_API_KEY"
ADMIN_KEY_ENV = "CODING_FRAMEWORK_ADMIN_KEY"


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Interface to bind (default 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(min=0, max=65_535, help="Port (default 8080).")] = None,
    model: Annotated[
        str | None,
        typer.Option(
            help="The champion: embedded | a model dir | models:/NAME/VERSION | models:/NAME@ALIAS | "
            "http(s)://HOST/v1@MODEL (default embedded)."
        ),
    ] = None,
    engine: Annotated[
        str | None, typer.Option(help="local | vllm | process: how model directories are served.")
    ] = None,
    api_key: Annotated[
        str | None,
        typer.Option(envvar=API_KEY_ENV, show_envvar=True, help="Bearer key for the inference endpoints."),
    ] = None,
    admin_key: Annotated[
        str | None,
        typer.Option(envvar=ADMIN_KEY_ENV, show_envvar=True, help="Bearer key for rollouts and deploys."),
    ] = None,
    config: Annotated[
        str | None, typer.Option(help="A ServingConfig YAML: a path or a shipped name (default: serving).")
    ] = None,
) -> None:
    """Serve a champion version; roll candidates out with `coding-framework deploy`."""
    from coding_framework.config import ConfigError, load_config
    from coding_framework.config.serving import ServingConfig
    from coding_framework.serving.server import run_server

    overrides = {"host": host, "port": port, "model": model, "engine": engine}
    try:
        cfg = load_config(ServingConfig, config or "serving", overrides)
    except ConfigError as exc:
        fail(" ".join(line.strip() for line in str(exc).splitlines() if line.strip()))
    if cfg.host not in ("127.0.0.1", "::1", "localhost") and not api_key:
        typer.echo(f"note: no --api-key: only loopback clients of {cfg.host} will be answered", err=True)
    try:
        run_server(cfg, api_key=api_key, admin_key=admin_key)
    except (ValueError, OSError) as exc:
        fail(str(exc).splitlines()[0])
