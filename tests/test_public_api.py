"""Each package's public API is its `__all__`, pinned here: changing it means editing this file."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest
from pydantic import BaseModel

import coding_framework
import coding_framework.config

PACKAGE = Path(coding_framework.__file__).parent
TEMPLATES = PACKAGE / "repotasks" / "minirepos"  # task data: the packages the agent fixes
PUBLIC_API = {
    "coding_framework": ["__version__"],
    "coding_framework.agents": [
        "Agents", "Attempt", "CodeExecutor", "CodeGenerator", "CodeReviewer", "Draft", "EngineCache",
        "Execution", "Finding", "LLMReviewer", "Review", "StaticReviewer", "build_agents", "has_tests",
        "problem_from_text",
    ],
    "coding_framework.cli": ["app"],
    "coding_framework.config": [
        "AgentsConfig", "AlgoConfig", "AlgorithmOverrides", "ArchitectureConfig", "AshaConfig",
        "AuditConfig", "BenchmarkSlice", "CheckpointConfig", "ChoiceDimension", "ConfigError",
        "CurriculumConfig", "DataConfig", "DataSource", "DecontaminationConfig", "EmbeddedModelConfig",
        "EpisodeRewardConfig", "EvalConfig", "ExecutorConfig", "FSDPSection", "FailoverConfig",
        "GateConfig", "GeneratorConfig", "GeneratorWarmStartConfig", "GraphConfig", "GridDimension",
        "GuidanceConfig",
        "InProcessConfig", "KLConfig", "LLMConfig", "LimitLearningConfig", "LimitsConfig",
        "LogUniformDimension", "MixedPrecisionSection", "ModelRef", "OptimConfig", "PhaseConfig",
        "PoliciesConfig", "PoolConfig", "PretrainConfig",
        "RepositoryConfig", "RepositoryDataConfig", "RepositoryWarmStartConfig",
        "ResourceLimits", "ReviewCreditConfig", "ReviewWarmStartConfig", "ReviewerConfig", "RewardConfig",
        "RolloutConfig", "RolloutPolicy", "SFTConfig", "SFTDataConfig", "SamplingConfig", "SandboxConfig",
        "ServingConfig", "SolveConfig", "StrictModel", "SweepConfig", "TokenizerConfig", "TrackingConfig",
        "TrainingConfig", "UniformDimension", "VLLMRolloutConfig", "VerlClusterSection", "VerlConfig",
        "VerlRolloutSection", "WorkflowConfig", "load_config", "parse_model_ref", "resolve_config",
        "shipped_config", "shipped_config_names",
    ],
    "coding_framework.curation": [
        "FilterReport", "Mutant", "OPERATORS", "Strength", "by_pass_rate", "candidate_calls",
        "dataset_kill_rate", "dataset_stats", "filter_by_strength", "measure_strength", "mutants",
        "pass_rates", "plot_distributions", "problem_mutants", "strengthen", "test_count", "with_pass_rates",
        "with_strength",
    ],
    "coding_framework.embedded": ["build_embedded_model", "cache_root", "ensure_embedded_model"],
    "coding_framework.evaluation": [
        "Scores", "agrade", "family", "grade", "pass_at_k", "pass_at_k_by_task", "repeat", "score",
        "summarize",
    ],
    "coding_framework.grading": ["ExecutionResult", "Grader", "LANGUAGES", "Language", "LimitLearner",
                                 "TestOutcome", "job_for", "languages_for", "tier_of"],
    "coding_framework.graphs": [
        "EpisodeState", "RoundRecord", "build_graph", "build_inference_graph", "build_training_graph",
    ],
    "coding_framework.llm": [
        "BatchRequestsFailed", "CallRecord", "EngineChatModel", "EngineError", "FinishReason", "Generation",
        "RequestFailed", "SamplingParams", "TemplateError", "TokenEngine", "TokenSession", "build_chat_model",
        "build_engine",
    ],
    "coding_framework.problems": [
        "BENCHMARKS", "Difficulty", "FAMILIES", "Problem", "ProblemLoadError", "TestFormat", "augment",
        "augment_split", "builtin_problems", "check_no_leak", "generate_instances", "load_benchmark",
        "load_humaneval", "load_mbpp", "load_problem_records", "mbpp_few_shot_prompt", "register_benchmark",
        "reserved_split", "root_task_id", "synthetic_split", "with_few_shot_prompt", "write_problem_records",
    ],
    "coding_framework.rewards": [
        "BaseRewardFunction", "CompositeReward", "CorrectnessReward", "EfficiencyReward", "REWARDS",
        "RewardOutput", "StyleReward", "get_reward", "lint", "register_reward",
    ],
    "coding_framework.repotasks": [
        "PatchError", "RepoTask", "RepoTaskSource", "SwebenchLoadError", "apply_patch", "load_minirepos",
        "load_swebench",
    ],
    "coding_framework.sandbox": [
        "BackendUnavailable", "ExecutionResult", "Job", "Sandbox", "Status", "TestOutcome",
    ],
    "coding_framework.models": [
        "ADAPTERS_DIR", "ADAPTER_CONFIG", "ADAPTER_FILE", "ModelError", "RegistryError", "ResolvedModel",
        "RoleAdapter", "adapter_checksums", "is_model_dir", "policies_for", "resolve_model",
        "role_adapter_map", "roles_for", "version_checksum", "weights_checksum",
    ],
    "coding_framework.sandbox.backends": [
        "BACKENDS", "BackendUnavailable", "BwrapWorker", "DockerWorker", "Worker", "get_backend",
        "register_backend",
    ],
    "coding_framework.sandbox.inprocess": [
        "InProcessSandbox", "UnittestTask", "build_command", "env_python", "from_report", "official_details",
        "official_status",
    ],
    "coding_framework.sandbox.judge": ["wire"],
    "coding_framework.serving": [
        "RolloutConflict", "RolloutHooks", "RolloutManager", "Route", "ServerThread", "create_app",
        "run_server",
    ],
    "coding_framework.serving.rollouts": [],
    "coding_framework.testing": [],
    "coding_framework.training": [
        "ALGORITHMS", "AlgorithmOverrides", "AlgorithmSpec", "AuditIssue", "AuditReport", "CallSpan",
        "CodingAgentLoop", "GeneratorModel", "KLConfig", "KLMonitor", "ReferencePolicy", "RunScope",
        "ServerManagerEngine", "StepRecord", "Trainer", "TrainingConfig", "TrainingResults", "Trajectory",
        "ValueHead", "audit", "compute_advantages", "configure", "dynamic_sampling_filter",
        "from_agent_loop_output", "from_data_proto", "from_records", "get_algorithm", "kl_in_reward",
        "kl_loss", "load_sweep", "make_controller", "policy_loss", "register_algorithm", "response_log_probs",
        "rows_for_update", "run_sweep", "to_agent_loop_output", "to_data_proto", "trajectories_from_episode",
        "value_loss", "verl_dataset_rows", "write_verl_dataset",
    ],
    "coding_framework.training.algos": [],
    "coding_framework.training.rollouts": [],
    "coding_framework.training.run": [],
    "coding_framework.training.sweep": [
        "SWEEP_FILE", "SweepError", "SweepResults", "load_sweep", "run_sweep", "train_trial", "trial_count",
        "tune_space",
    ],
    "coding_framework.training.rollouts.engines": [
        "LocalCopyEngine", "PolicySnapshot", "PolicyWeights", "Produced", "ROLLOUT_ENGINES", "RolloutEngine",
        "RolloutEngineFactory", "RolloutJob", "RolloutPipeline", "TrainerEngine", "VLLMRolloutEngine",
        "behaviour_version", "build_rollout_engine", "register_rollout_engine",
    ],
    "coding_framework.training.verl": [
        "CodingAgentLoop", "PreflightConfig", "PreflightReport", "ServerManagerEngine", "TokenServer",
        "VerlLaunch", "from_agent_loop_output", "from_data_proto", "merge_checkpoint", "register_export",
        "run_preflight", "to_agent_loop_output", "to_data_proto", "verl_dataset_rows", "write_verl_dataset",
    ],
    "coding_framework.workspace": [
        "DEFAULT_TOOLS", "Observation", "TOOLS", "ToolBudget", "ToolCall", "ToolContext", "ToolSpec",
        "Workspace", "WorkspaceError", "call_tool", "tool", "tool_specs",
    ],
}


def test_every_package_is_pinned() -> None:
    packages = {".".join(p.parent.relative_to(PACKAGE.parent).parts) for p in PACKAGE.rglob("__init__.py")
                if TEMPLATES not in p.parents}
    assert packages == set(PUBLIC_API)


@pytest.mark.parametrize("package", sorted(PUBLIC_API))
def test_exports_are_pinned_and_exist(package: str) -> None:
    module = importlib.import_module(package)
    exported = getattr(module, "__all__", None)
    assert exported is not None, f"the __init__.py of {package} declares no __all__"
    assert sorted(exported) == PUBLIC_API[package]
    assert [name for name in exported if not hasattr(module, name)] == []


def test_training_exports_the_trainer() -> None:
    assert "Trainer" in importlib.import_module("coding_framework.training").__all__


def test_config_exports_every_config_model() -> None:
    models = set()
    for info in pkgutil.iter_modules(coding_framework.config.__path__, "coding_framework.config."):
        module = importlib.import_module(info.name)
        models |= {
            name
            for name, obj in vars(module).items()
            if inspect.isclass(obj) and issubclass(obj, BaseModel) and obj.__module__ == info.name
        }
    assert "TrainingConfig" in models and "WorkflowConfig" in models
    assert sorted(models - set(coding_framework.config.__all__)) == []
