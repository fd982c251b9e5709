"""The Typer application every command module registers on (``cli.main`` imports them all)."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="coding-framework",
    help="Train, evaluate and serve Generator / Executor / Reviewer coding agents.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def _root(log_level: str = typer.Option("WARNING", help="structlog level for stderr logs.")) -> None:
    from coding_framework.logs import configure_logging

    configure_logging(log_level)

