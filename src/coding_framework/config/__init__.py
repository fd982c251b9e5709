"""Typed configuration: one pydantic model per component; YAML files ship in `coding_framework/configs/`.

`load_config(Model, "grpo_basic")` loads a shipped config by name, `load_config(Model, "my.yaml")` a file.
"""

from coding_framework.config.agents import AgentsConfig, ExecutorConfig, GeneratorConfig, ReviewerConfig
from coding_framework.config.algorithm import AlgorithmOverrides
from coding_framework.config.embedded import (
    ArchitectureConfig,
    EmbeddedModelConfig,
    PhaseConfig,
    PretrainConfig,
    SFTConfig,
    SFTDataConfig,
    TokenizerConfig,
)
from coding_framework.config.errors import ConfigError
from coding_framework.config.graph import GraphConfig, WorkflowConfig
from coding_framework.config.guidance import GuidanceConfig
from coding_framework.config.inprocess import InProcessConfig
from coding_framework.config.kl import KLConfig
from coding_framework.config.llm import LLMConfig, SamplingConfig
from coding_framework.config.loader import StrictModel, load_config
from coding_framework.config.model_ref import ModelRef, parse_model_ref
from coding_framework.config.policies import PoliciesConfig
from coding_framework.config.repository import RepositoryConfig
from coding_framework.config.review_credit import ReviewCreditConfig, ReviewWarmStartConfig
from coding_framework.config.rewards import RewardConfig
from coding_framework.config.rollout import RolloutPolicy
from coding_framework.config.sandbox import LimitLearningConfig, ResourceLimits, SandboxConfig
from coding_framework.config.serving import (
    FailoverConfig,
    LimitsConfig,
    PoolConfig,
    ServingConfig,
    SolveConfig,
)
from coding_framework.config.shipped import resolve_config, shipped_config, shipped_config_names
from coding_framework.config.sweep import (
    AshaConfig,
    ChoiceDimension,
    GridDimension,
    LogUniformDimension,
    SweepConfig,
    UniformDimension,
)
from coding_framework.config.training import (
    AlgoConfig,
    AuditConfig,
    BenchmarkSlice,
    CheckpointConfig,
    CurriculumConfig,
    DataConfig,
    DataSource,
    DecontaminationConfig,
    EpisodeRewardConfig,
    EvalConfig,
    GateConfig,
    OptimConfig,
    RepositoryDataConfig,
    RolloutConfig,
    TrackingConfig,
    TrainingConfig,
    VLLMRolloutConfig,
)
from coding_framework.config.verl import (
    FSDPSection,
    MixedPrecisionSection,
    VerlClusterSection,
    VerlConfig,
    VerlRolloutSection,
)
from coding_framework.config.warm_start import GeneratorWarmStartConfig, RepositoryWarmStartConfig

__all__ = [
    "AgentsConfig",
    "AlgoConfig",
    "AlgorithmOverrides",
    "ArchitectureConfig",
    "AshaConfig",
    "AuditConfig",
    "BenchmarkSlice",
    "CheckpointConfig",
    "ChoiceDimension",
    "ConfigError",
    "CurriculumConfig",
    "DataConfig",
    "DataSource",
    "DecontaminationConfig",
    "EmbeddedModelConfig",
    "EpisodeRewardConfig",
    "EvalConfig",
    "ExecutorConfig",
    "FSDPSection",
    "FailoverConfig",
    "GateConfig",
    "GeneratorConfig",
    "GeneratorWarmStartConfig",
    "GraphConfig",
    "GridDimension",
    "GuidanceConfig",
    "InProcessConfig",
    "KLConfig",
    "LLMConfig",
    "LimitLearningConfig",
    "LimitsConfig",
    "LogUniformDimension",
    "MixedPrecisionSection",
    "ModelRef",
    "OptimConfig",
    "PhaseConfig",
    "PoliciesConfig",
    "PoolConfig",
    "PretrainConfig",
    "RepositoryConfig",
    "RepositoryDataConfig",
    "RepositoryWarmStartConfig",
    "ResourceLimits",
    "ReviewCreditConfig",
    "ReviewWarmStartConfig",
    "ReviewerConfig",
    "RewardConfig",
    "RolloutConfig",
    "RolloutPolicy",
    "SFTConfig",
    "SFTDataConfig",
    "SamplingConfig",
    "SandboxConfig",
    "ServingConfig",
    "SolveConfig",
    "StrictModel",
    "SweepConfig",
    "TokenizerConfig",
    "TrackingConfig",
    "TrainingConfig",
    "UniformDimension",
    "VLLMRolloutConfig",
    "VerlClusterSection",
    "VerlConfig",
    "VerlRolloutSection",
    "WorkflowConfig",
    "load_config",
    "parse_model_ref",
    "resolve_config",
    "shipped_config",
    "shipped_config_names",
]
