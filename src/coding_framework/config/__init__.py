"""Typed configuration: one pydantic model per component, YAML defaults in the repo's `configs/`."""

from coding_framework.config.loader import ConfigError, StrictModel, load_config
from coding_framework.config.rewards import RewardConfig
from coding_framework.config.sandbox import SandboxConfig

__all__ = ["ConfigError", "RewardConfig", "SandboxConfig", "StrictModel", "load_config"]
