"""The shipped YAML configs: each loads into its model, and a config is named by a path or a shipped name."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from coding_framework.config import (
    ConfigError,
    RewardConfig,
    SandboxConfig,
    load_config,
    resolve_config,
    shipped_config,
    shipped_config_names,
)
from coding_framework.config.agents import AgentsConfig
from coding_framework.config.embedded import EmbeddedModelConfig
from coding_framework.config.graph import GraphConfig
from coding_framework.config.llm import LLMConfig
from coding_framework.config.review_credit import ReviewCreditConfig
from coding_framework.config.serving import ServingConfig
from coding_framework.config.sweep import SweepConfig
from coding_framework.config.training import TrainingConfig
from coding_framework.config.verl import VerlConfig

# Every shipped config and the model it fills. A new YAML without an entry here fails the coverage test.
MODELS: dict[str, type[BaseModel]] = {
    "agents": AgentsConfig,
    "graph": GraphConfig,
    "sandbox": SandboxConfig,
    "llm": LLMConfig,
    "embedded_model": EmbeddedModelConfig,
    "reward_weights": RewardConfig,
    "review_credit": ReviewCreditConfig,
    "grpo_basic": TrainingConfig,
    "grpo_secure": TrainingConfig,
    "ppo_basic": TrainingConfig,
    "rloo_basic": TrainingConfig,
    "reinforce_pp_basic": TrainingConfig,
    "dapo_basic": TrainingConfig,
    "quickstart": TrainingConfig,
    "quickstart_lora": TrainingConfig,
    "per_role_lora": TrainingConfig,
    "smollm2_lora": TrainingConfig,
    "smollm2_grpo": TrainingConfig,
    "repo_grpo": TrainingConfig,
    "serving": ServingConfig,
    "sweep_basic": SweepConfig,
    "verl_fsdp": VerlConfig,
    "verl_smoke": VerlConfig,
    "verl_cpu": TrainingConfig,
    "verl_cpu_repo": TrainingConfig,
    "verl_parity": TrainingConfig,
    "verl_fsdp_cpu": VerlConfig,
}
# Component configs state their model's defaults (the defaults are documented once, on the fields).
STATE_THE_DEFAULTS = [
    "agents", "graph", "sandbox", "llm", "embedded_model", "reward_weights", "review_credit", "serving",
]


def test_every_shipped_config_has_a_model() -> None:
    assert sorted(MODELS) == shipped_config_names()


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_shipped_config_loads_into_its_model(name: str) -> None:
    config = load_config(MODELS[name], name)
    assert isinstance(config, MODELS[name])


@pytest.mark.parametrize("name", STATE_THE_DEFAULTS)
def test_component_configs_state_the_defaults(name: str) -> None:
    assert load_config(MODELS[name], name) == MODELS[name]()


@pytest.mark.parametrize(
    ("name", "algorithm"),
    [("grpo_basic", "grpo"), ("ppo_basic", "ppo"), ("rloo_basic", "rloo"), ("dapo_basic", "dapo")],
)
def test_training_configs_are_for_their_algorithm(name: str, algorithm: str) -> None:
    assert load_config(TrainingConfig, name).algorithm == algorithm


def test_a_name_with_or_without_the_suffix_is_the_shipped_file() -> None:
    assert resolve_config("grpo_basic") == resolve_config("grpo_basic.yaml") == shipped_config("grpo_basic")
    assert shipped_config("grpo_basic").name == "grpo_basic.yaml"


def test_shipped_configs_do_not_depend_on_the_working_directory(tmp_path, monkeypatch) -> None:
    expected = load_config(TrainingConfig, "quickstart")
    monkeypatch.chdir(tmp_path)
    assert load_config(TrainingConfig, "quickstart") == expected


def test_an_existing_file_wins_over_a_shipped_name(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("graph").write_text("max_rounds: 7\n")
    assert load_config(GraphConfig, "graph").max_rounds == 7
    assert load_config(GraphConfig, shipped_config("graph")).max_rounds == 3  # the shipped file itself
    assert load_config(GraphConfig, tmp_path / "graph").max_rounds == 7


def test_an_unknown_name_is_one_line_that_lists_the_shipped_names() -> None:
    with pytest.raises(ConfigError) as info:
        resolve_config("grpo_basics")
    message = str(info.value)
    assert "\n" not in message and message.startswith("config file not found: grpo_basics")
    assert all(name in message for name in shipped_config_names())
    with pytest.raises(ConfigError, match="no shipped config is called 'nope'; shipped: agents, "):
        shipped_config("nope")


def test_only_bare_names_are_shipped_names() -> None:
    with pytest.raises(ConfigError, match=r"config file not found: configs/grpo_basic\.yaml"):
        resolve_config("configs/grpo_basic.yaml")


def test_overrides_skip_none_and_dotted_keys_set_one_nested_field(tmp_path) -> None:
    path = tmp_path / "sandbox.yaml"
    path.write_text("backend: docker\nworkers: 3\nlimits: {timeout_s: 0.5, memory_mb: 256}\n")
    config = load_config(SandboxConfig, path, overrides={"workers": None, "limits.timeout_s": 9.0})
    assert (config.backend, config.workers) == ("docker", 3)
    assert (config.limits.timeout_s, config.limits.memory_mb) == (9.0, 256)
    empty = load_config(SandboxConfig, None, overrides={"limits.timeout_s": 2.0})
    assert empty.limits.timeout_s == 2.0 and empty.limits.memory_mb == SandboxConfig().limits.memory_mb


def test_a_bad_override_names_the_nested_field(tmp_path) -> None:
    with pytest.raises(ConfigError, match=r"limits\.timeout_s: Input should be greater than 0"):
        load_config(SandboxConfig, "sandbox", overrides={"limits.timeout_s": -1.0})
