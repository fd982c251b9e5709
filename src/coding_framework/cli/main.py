"""The `coding-framework` command line: the Typer app (``cli.app``) with every command module registered."""

from __future__ import annotations

# One import per command module; each module decorates its functions with @app.command().
from coding_framework.cli import (  # noqa: F401
    bootstrap,
    configs,
    data,
    decontaminate,
    deploy,
    evaluate,
    quickstart,
    serve,
    solve,
    sweep,
    train,
    verl_preflight,
    verl_train,
)
from coding_framework.cli.app import app

__all__ = ["app"]
