"""The Typer application every command module registers on (``cli.main`` imports them all)."""

from __future__ import annotations

import signal
import sys
from types import FrameType
from typing import Annotated

import typer

app = typer.Typer(
    name="coding-framework",
    help="Train, evaluate and serve Generator / Executor / Reviewer coding agents.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def _root(
    log_level: Annotated[str, typer.Option(help="structlog level for stderr logs.")] = "WARNING",
) -> None:
    from coding_framework.logs import configure_logging

    configure_logging(log_level)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    """SIGTERM (a job scheduler, `timeout`, `kill`) unwinds like Ctrl-C: every ``finally`` runs, so a vLLM
    server or sandbox pool this command started is stopped instead of outliving it. `serve` installs
    uvicorn's own handlers while it runs."""
    del frame
    sys.exit(128 + signum)

