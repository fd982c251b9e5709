"""Typed configuration: one pydantic model per component, YAML defaults in the repo's `configs/`."""

from coding_framework.config.agents import AgentsConfig, ExecutorConfig, GeneratorConfig, ReviewerConfig
from coding_framework.config.embedded import (
    ArchitectureConfig,
    EmbeddedModelConfig,
    PhaseConfig,
    PretrainConfig,
    SFTConfig,
    SFTDataConfig,
    TokenizerConfig,
)
from coding_framework.config.graph import GraphConfig, WorkflowConfig
from coding_framework.config.llm import LLMConfig, SamplingConfig
from coding_framework.config.loader import ConfigError, StrictModel, load_config
from coding_framework.config.rewards import RewardConfig, RewardWeights
from coding_framework.config.sandbox import ResourceLimits, SandboxConfig
from coding_framework.config.training import (
    AlgoConfig,
    AuditConfig,
    CheckpointConfig,
    CurriculumConfig,
    DataConfig,
    EpisodeRewardConfig,
    EvalConfig,
    OptimConfig,
    RolloutConfig,
    TrackingConfig,
    TrainingConfig,
)

__all__ = [
    "AgentsConfig",
    "AlgoConfig",
    "ArchitectureConfig",
    "AuditConfig",
    "CheckpointConfig",
    "ConfigError",
    "CurriculumConfig",
    "DataConfig",
    "EmbeddedModelConfig",
    "EpisodeRewardConfig",
    "EvalConfig",
    "ExecutorConfig",
    "GeneratorConfig",
    "GraphConfig",
    "LLMConfig",
    "OptimConfig",
    "PhaseConfig",
    "PretrainConfig",
    "ResourceLimits",
    "ReviewerConfig",
    "RewardConfig",
    "RewardWeights",
    "RolloutConfig",
    "SFTConfig",
    "SFTDataConfig",
    "SamplingConfig",
    "SandboxConfig",
    "StrictModel",
    "TokenizerConfig",
    "TrackingConfig",
    "TrainingConfig",
    "WorkflowConfig",
    "load_config",
]
