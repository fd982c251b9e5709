"""`coding-framework serve`: the model server (OpenAI-compatible chat, /v1/solve, rollouts)."""

from __future__ import annotations

from typing import Annotated

import typer

from coding_framework.cli.app import app
from coding_framework.cli.common import ADMIN_KEY_ENV, API_KEY_ENV, MODEL_HELP, model_flag, resolved_or_fail
from coding_framework.cli.output import fail


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Interface to bind (default 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(min=0, max=65_535, help="Port (default 8080).")] = None,
    model: Annotated[str | None, typer.Option(help=f"The champion (default embedded). {MODEL_HELP}")] = None,
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
    state_dir: Annotated[
        str | None,
        typer.Option(help="Where the state file (champion, running rollout, sessions) lives, so a restart "
                     "resumes (default: the user's state directory, one folder per port)."),
    ] = None,
) -> None:
    """Serve a champion version; roll candidates out with `coding-framework deploy`."""
    from coding_framework.config import ConfigError, load_config
    from coding_framework.config.serving import ServingConfig
    from coding_framework.serving.server import run_server

    ref = model_flag(model) if model is not None else None
    overrides = {"host": host, "port": port, "model": ref, "engine": engine, "state_dir": state_dir}
    try:
        cfg = load_config(ServingConfig, config or "serving", overrides)
    except ConfigError as exc:
        fail(" ".join(line.strip() for line in str(exc).splitlines() if line.strip()))
    # A bad champion fails here, in one line, before any server starts; the server deploys this resolution.
    resolved = [] if cfg.model.is_endpoint else [
        resolved_or_fail(cfg.model, registry_uri=cfg.mlflow_uri, cache_dir=cfg.model_cache)
    ]
    if cfg.host not in ("127.0.0.1", "::1", "localhost") and not api_key:
        typer.echo(f"note: no --api-key: only loopback clients of {cfg.host} will be answered", err=True)
    try:
        run_server(cfg, api_key=api_key, admin_key=admin_key, resolved=resolved)
    except (ValueError, OSError) as exc:
        fail(str(exc).splitlines()[0])
