"""The `coding-framework` command line. Each command lives in its own module and registers here."""

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


def _register() -> None:
    # One import per command module; each module decorates functions with @app.command().
    from coding_framework.cli import (
        bootstrap,  # noqa: F401
        configs,  # noqa: F401
        data,  # noqa: F401
        deploy,  # noqa: F401
        evaluate,  # noqa: F401
        quickstart,  # noqa: F401
        serve,  # noqa: F401
        solve,  # noqa: F401
        sweep,  # noqa: F401
        train,  # noqa: F401
        verl_preflight,  # noqa: F401
        verl_train,  # noqa: F401
    )


_register()
