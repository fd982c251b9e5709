"""Typed configuration: one pydantic model per component; YAML files ship in `coding_framework/configs/`.

`load_config(Model, "grpo_basic")` loads a shipped config by name, `load_config(Model, "my.yaml")` a file.
"""

from coding_framework.config.errors import ConfigError
from coding_framework.config.loader import StrictModel, load_config
from coding_framework.config.rewards import RewardConfig
from coding_framework.config.sandbox import SandboxConfig
from coding_framework.config.shipped import resolve_config, shipped_config, shipped_config_names

__all__ = [
    "ConfigError",
    "RewardConfig",
    "SandboxConfig",
    "StrictModel",
    "load_config",
    "resolve_config",
    "shipped_config",
    "shipped_config_names",
]
