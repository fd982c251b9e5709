"""Load YAML files into validated pydantic models with errors that say how to fix them.

A config is named by a path or, when no such file exists, by the name of a shipped config
(`grpo_basic`, `quickstart.yaml`, ...; see `config/shipped.py`).
"""

from __future__ import annotations

from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from coding_framework.config.errors import ConfigError
from coding_framework.config.shipped import resolve_config

__all__ = ["ConfigError", "StrictModel", "load_config"]

M = TypeVar("M", bound=BaseModel)


class StrictModel(BaseModel):
    """Base for every config model: unknown keys are errors, so typos never pass silently."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def _format_errors(err: ValidationError, source: str) -> str:
    lines = [f"invalid configuration in {source}:"]
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "<root>"
        hint = " (unknown key: remove it or check its spelling)" if e["type"] == "extra_forbidden" else ""
        lines.append(f"  - {loc}: {e['msg']}{hint}")
    return "\n".join(lines)


def _set_dotted(data: dict[str, Any], key: str, value: Any) -> None:
    *parents, leaf = key.split(".")
    for part in parents:
        if not isinstance(data.get(part), dict):
            data[part] = {}
        data = data[part]
    data[leaf] = value


def load_config(
    model: type[M],
    path: str | Path | Traversable | None = None,
    overrides: dict[str, Any] | None = None,
    section: str | None = None,
) -> M:
    """Build ``model`` from an optional YAML file (optionally one top-level ``section`` of it) and overrides.

    ``path`` is a file or a shipped config's name (see `resolve_config`), or a shipped config's file
    (`shipped_config`); None keeps the model's defaults. An override key may be dotted
    (``limits.timeout_s``) to set one nested field. Overrides whose value is None are skipped, so flags
    the user did not give leave the file's values alone.
    """
    data: dict[str, Any] = {}
    source = "<defaults>"
    if path is not None:
        file = resolve_config(path) if isinstance(path, str | Path) else path
        source = str(file)
        try:
            loaded = yaml.safe_load(file.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as exc:
            raise ConfigError(f"{source} is not valid YAML: {exc}") from exc
        if not isinstance(loaded, dict):
            kind = type(loaded).__name__
            raise ConfigError(f"{source} must contain a mapping at the top level, got {kind}")
        if section is not None:
            loaded = loaded.get(section, {}) or {}
        data.update(loaded)
    for key, value in (overrides or {}).items():
        if value is not None:
            _set_dotted(data, key, value)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_errors(exc, source)) from None
