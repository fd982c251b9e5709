"""The ``coding-framework`` command line; ``app`` is the Typer application with every command registered."""

from coding_framework.cli.main import app

__all__ = ["app"]
