"""`evaluate`'s sandbox flags: --timeout reaches both the judge and the in-process (BigCodeBench) tier."""

from __future__ import annotations

import pytest

from coding_framework.cli.evaluate import sandbox_settings
from coding_framework.config import ConfigError, SandboxConfig, load_config, shipped_config


def test_timeout_sets_both_tiers() -> None:
    config = sandbox_settings(None, timeout=7.5, workers=3)
    assert config.limits.timeout_s == 7.5
    assert config.inprocess.timeout_s == 7.5
    assert config.workers == 3


def test_no_flags_keep_the_yaml_values() -> None:
    shipped = load_config(SandboxConfig, shipped_config("sandbox"))
    config = sandbox_settings(None)
    assert config.limits.timeout_s == shipped.limits.timeout_s
    assert config.inprocess.timeout_s == shipped.inprocess.timeout_s
    assert config.inprocess.timeout_s != config.limits.timeout_s  # the tiers differ until --timeout is given


def test_out_of_range_timeout_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="timeout_s"):
        sandbox_settings(None, timeout=0)
