"""Load YAML files into validated pydantic models with errors that say how to fix them."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

M = TypeVar("M", bound=BaseModel)


class ConfigError(ValueError):
    """A configuration file or value is invalid; the message names the file, the field and the fix."""


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


def load_config(
    model: type[M],
    path: str | Path | None = None,
    overrides: dict[str, Any] | None = None,
    section: str | None = None,
) -> M:
    """Build ``model`` from an optional YAML file (optionally one top-level ``section`` of it) and overrides."""
    data: dict[str, Any] = {}
    source = "<defaults>"
    if path is not None:
        p = Path(path)
        source = str(p)
        if not p.is_file():
            raise ConfigError(f"config file not found: {p}")
        try:
            loaded = yaml.safe_load(p.read_text()) or {}
        except yaml.YAMLError as exc:
            raise ConfigError(f"{p} is not valid YAML: {exc}") from exc
        if not isinstance(loaded, dict):
            raise ConfigError(f"{p} must contain a mapping at the top level, got {type(loaded).__name__}")
        if section is not None:
            loaded = loaded.get(section, {}) or {}
        data.update(loaded)
    if overrides:
        data.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_errors(exc, source)) from None
