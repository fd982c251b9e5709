"""`coding-framework configs`: list the shipped YAML configs, or print one to copy and edit."""

from __future__ import annotations

from typing import Annotated

import typer

from coding_framework.cli.app import app
from coding_framework.cli.output import fail


@app.command()
def configs(
    name: Annotated[
        str | None, typer.Argument(help="A shipped config to print, e.g. grpo_basic (default: list them).")
    ] = None,
) -> None:
    """List the shipped configs (one name a line), or print NAME's YAML.

    Any `--config`-style option takes these names as they are, or a file:
    `coding-framework configs grpo_basic > my.yaml`, edit it, then `train --config my.yaml ...`.
    """
    from coding_framework.config import ConfigError, shipped_config, shipped_config_names

    if name is None:
        typer.echo("\n".join(shipped_config_names()))
        return
    try:
        text = shipped_config(name).read_text(encoding="utf-8")
    except ConfigError as exc:
        fail(str(exc))
    typer.echo(text, nl=False)
