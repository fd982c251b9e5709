"""Shared CLI output conventions: errors without tracebacks, and one JSON object as the last stdout line."""

from __future__ import annotations

import json
from typing import Any, NoReturn

import typer


def fail(message: str, code: int = 2) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def print_result_line(payload: dict[str, Any]) -> None:
    typer.echo(json.dumps(payload, default=str))
