"""The YAML configs shipped inside the package (`coding_framework/configs/`), and how a config is named.

A shipped config's name is its file name with or without `.yaml` (`grpo_basic`, `quickstart.yaml`,
`sandbox`, ...). They are package data, so they are found the same way from a checkout, an editable
install or a wheel, whatever the current directory.
"""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from coding_framework.config.errors import ConfigError

__all__ = ["resolve_config", "shipped_config", "shipped_config_names"]

_SUFFIX = ".yaml"


def _folder() -> Traversable:
    return resources.files("coding_framework") / "configs"


def shipped_config_names() -> list[str]:
    """The names of every shipped config, sorted."""
    return sorted(f.name.removesuffix(_SUFFIX) for f in _folder().iterdir() if f.name.endswith(_SUFFIX))


def shipped_config(name: str) -> Traversable:
    """The shipped config called ``name`` (with or without `.yaml`)."""
    stem = name.removesuffix(_SUFFIX)
    names = shipped_config_names()
    if stem not in names:
        raise ConfigError(f"no shipped config is called {name!r}; shipped: {', '.join(names)}")
    return _folder() / f"{stem}{_SUFFIX}"


def resolve_config(value: str | Path) -> Traversable:
    """The YAML file ``value`` names: an existing file wins, else the shipped config of that name."""
    path = Path(value)
    if path.is_file():
        return path
    try:
        return shipped_config(str(value))
    except ConfigError:
        names = ", ".join(shipped_config_names())
        raise ConfigError(f"config file not found: {value} (nor is it a shipped config: {names})") from None
