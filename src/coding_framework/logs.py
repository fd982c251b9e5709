"""structlog configuration shared by the CLI, the library and the tests."""

from __future__ import annotations

import logging
import sys

import structlog

_configured = False


class _CurrentStderr:
    """Writes to whatever ``sys.stderr`` is now (pytest and notebooks swap it), not the one at setup."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def configure_logging(level: str = "INFO", json: bool = False) -> None:
    """Route structlog to stderr so stdout stays free for machine-readable results."""
    global _configured
    processors: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso"),
    ]
    renderer = structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    structlog.configure(
        processors=[*processors, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        # structlog only calls write() and flush() on `file`; its TextIO annotation asks for more.
        logger_factory=structlog.PrintLoggerFactory(file=_CurrentStderr()),  # type: ignore[arg-type]
        cache_logger_on_first_use=True,
    )
    _configured = True


def get_logger(name: str) -> structlog.stdlib.BoundLogger:
    if not _configured:
        configure_logging()
    return structlog.get_logger(name)
