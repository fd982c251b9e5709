"""Hyperparameter sweeps: Ray Tune runs the RL trainer once per trial over a search space of dotted
``TrainingConfig`` keys, and ASHA stops trials whose metric lags. YAML: shipped `sweep_basic`.

The keys are checked against ``TrainingConfig`` when the config loads; ``load_sweep`` also checks every
value against the base config (each one applied to it and validated), so bad input is reported before Ray
or torch is imported. ``training.sweep`` runs the sweep.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Annotated, Any, Literal, get_origin

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from coding_framework.config.loader import ConfigError, StrictModel, load_config
from coding_framework.config.shipped import resolve_config
from coding_framework.config.training import TrainingConfig

__all__ = [
    "AshaConfig", "ChoiceDimension", "GridDimension", "LogUniformDimension", "SearchDimension",
    "SweepConfig", "UniformDimension", "apply_dotted", "check_training_key", "check_values", "load_sweep",
    "training_config",
]


class ChoiceDimension(StrictModel):
    """One of `values`, drawn at random per trial (`tune.choice`)."""

    type: Literal["choice"]
    values: list[Any] = Field(min_length=1, description="The candidates (any YAML values).")


class GridDimension(StrictModel):
    """Every one of `values` (`tune.grid_search`): each grid combination runs `num_samples` times."""

    type: Literal["grid"]
    values: list[Any] = Field(min_length=1, description="The values, each tried.")


class UniformDimension(StrictModel):
    """A float drawn uniformly from [low, high] (`tune.uniform`)."""

    type: Literal["uniform"]
    low: float
    high: float

    @model_validator(mode="after")
    def _ordered(self) -> UniformDimension:
        if not self.low < self.high:
            raise ValueError(f"low ({self.low}) must be below high ({self.high})")
        return self


class LogUniformDimension(StrictModel):
    """A float drawn uniformly in log space from [low, high], low > 0 (`tune.loguniform`): learning rates."""

    type: Literal["loguniform"]
    low: float = Field(gt=0)
    high: float = Field(gt=0)

    @model_validator(mode="after")
    def _ordered(self) -> LogUniformDimension:
        if not self.low < self.high:
            raise ValueError(f"low ({self.low}) must be below high ({self.high})")
        return self


SearchDimension = Annotated[
    ChoiceDimension | GridDimension | UniformDimension | LogUniformDimension, Field(discriminator="type")
]


class AshaConfig(StrictModel):
    """ASHA (Li et al., 2018, https://arxiv.org/abs/1810.05934) over training steps: at steps
    `grace_period * reduction_factor**k` a trial whose metric is below the top `1/reduction_factor` of the
    trials that reached that step before it is stopped."""

    enabled: bool = Field(True, description="false: every trial runs all its steps.")
    max_t: int | None = Field(
        None, ge=1, description="Steps after which a trial stops; null: the trials' own `steps`."
    )
    grace_period: int = Field(1, ge=1, description="Steps every trial runs before it can be stopped.")
    reduction_factor: float = Field(2.0, gt=1, description="Share kept at each rung is 1/reduction_factor.")


def check_training_key(key: str) -> str | None:
    """Why the dotted ``key`` names no ``TrainingConfig`` field (None when it names one). Keys may reach
    into a mapping field (``curriculum.start.easy``); their values are checked when applied."""
    model: type[BaseModel] = TrainingConfig
    parts = key.split(".")
    for i, part in enumerate(parts):
        where = ".".join(parts[:i]) or "TrainingConfig"
        field = model.model_fields.get(part)
        if field is None:
            return f"unknown key {key!r}: {where} has no field {part!r}; valid: {sorted(model.model_fields)}"
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            model = annotation
        elif i < len(parts) - 1 and get_origin(annotation) is not dict:
            return f"unknown key {key!r}: {'.'.join(parts[: i + 1])} is a value, not a section"
        else:
            return None
    return None


class SweepConfig(StrictModel):
    """One sweep: the base training config, what varies, what is optimised, and how trials are scheduled.

    Each trial trains `base` with `overrides` and its sampled values applied, in its own run directory
    under the sweep's, and logs to the sweep's MLflow store (`tracking.mlflow_uri` and
    `tracking.experiment` are set by the sweep)."""

    base: str = Field(
        "quickstart",
        description="The TrainingConfig every trial starts from: a YAML path (relative to the sweep file "
        "or the current directory) or a shipped name.",
    )
    overrides: dict[str, Any] = Field(
        default_factory=dict,
        description="Dotted TrainingConfig keys set in every trial (`steps: 4`), before the sampled ones.",
    )
    search_space: dict[str, SearchDimension] = Field(
        min_length=1, description="Dotted TrainingConfig key -> the dimension its values come from."
    )
    metric: str = Field(
        "reward_mean",
        description="The per-step trainer metric Tune optimises (`reward_mean`, `pass_rate`, "
        "`heldout_pass@1`, ...); `heldout_pass@1` is reported at `eval.every` steps and at the end.",
    )
    mode: Literal["max", "min"] = Field("max", description="Whether a higher or a lower metric is better.")
    num_samples: int = Field(
        4, ge=1, description="Trials drawn from the space; with grid dimensions, runs of each combination."
    )
    asha: AshaConfig = Field(default_factory=AshaConfig)
    cpus_per_trial: float = Field(
        1.0, gt=0, description="CPUs Ray reserves per trial (`tune.with_resources`)."
    )
    trial_resources: dict[str, Annotated[float, Field(gt=0)]] = Field(
        default_factory=dict,
        description="Custom Ray resources each trial reserves besides its CPUs: `{sweep_node: 1}` runs "
        "trials only on nodes started with `--resources '{\"sweep_node\": N}'` (the workers, not the head).",
    )
    max_failures: int = Field(
        2,
        ge=0,
        description="Restarts of a failed trial (a lost node, a killed worker) from its last checkpoint "
        "before it counts as an error; the sweep goes on with the other trials. 0: the first failure stops "
        "the sweep.",
    )
    max_concurrent_trials: int = Field(2, ge=1, description="Trials running at once.")
    ray_cpus: int = Field(2, ge=1, description="CPUs of the local Ray cluster the sweep starts.")
    seed: int = Field(0, description="Seeds the draws from the search space.")
    experiment: str = Field(
        "coding-framework-sweep", description="MLflow experiment of the sweep and its trials."
    )

    @field_validator("search_space", "overrides")
    @classmethod
    def _known_keys(cls, table: dict[str, Any]) -> dict[str, Any]:
        problems = [p for p in map(check_training_key, table) if p]
        if problems:
            raise ValueError("; ".join(problems))
        return table

    @model_validator(mode="after")
    def _resources(self) -> SweepConfig:
        if self.cpus_per_trial > self.ray_cpus:
            raise ValueError(
                f"cpus_per_trial ({self.cpus_per_trial}) exceeds ray_cpus ({self.ray_cpus}): no trial "
                "could start; lower cpus_per_trial or raise ray_cpus"
            )
        return self


def apply_dotted(data: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``data`` with each dotted key of ``values`` set (missing sections are created)."""
    out = copy.deepcopy(data)
    for key, value in values.items():
        *parents, leaf = key.split(".")
        node = out
        for part in parents:
            if not isinstance(node.get(part), dict):
                node[part] = {}
            node = node[part]
        node[leaf] = value
    return out


def training_config(data: dict[str, Any], what: str) -> TrainingConfig:
    """``data`` as a TrainingConfig, or a one-line ConfigError saying that ``what`` set rejected fields."""
    try:
        return TrainingConfig.model_validate(data)
    except ValidationError as exc:
        problems = (f"{'.'.join(str(p) for p in e['loc']) or 'config'}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"{what}: {'; '.join(problems)}") from None


def check_values(sweep: SweepConfig, base: dict[str, Any]) -> None:
    """Every value a dimension can take (its values, or its bounds) applied alone to ``base`` must give a
    valid TrainingConfig; else a ConfigError naming the key and the value."""
    for key, dim in sweep.search_space.items():
        values = dim.values if isinstance(dim, ChoiceDimension | GridDimension) else [dim.low, dim.high]
        for value in values:
            training_config(apply_dotted(base, {key: value}), f"search_space.{key} = {value!r}")


def load_sweep(path: str | Path) -> tuple[SweepConfig, dict[str, Any]]:
    """The sweep at ``path`` (a file or a shipped name) and its base config with the overrides applied,
    as a validated ``TrainingConfig`` dump, every search-space value checked against it. A relative base
    path is looked up next to the sweep file first; a relative model directory is made absolute (trials
    run in other processes)."""
    sweep = load_config(SweepConfig, path)
    beside = Path(str(resolve_config(path))).parent / sweep.base
    base_file = beside if not Path(sweep.base).is_absolute() and beside.is_file() else sweep.base
    base = load_config(TrainingConfig, base_file).model_dump(mode="json")
    data = training_config(apply_dotted(base, sweep.overrides), "overrides").model_dump(mode="json")
    if data["model"] != "embedded":
        data["model"] = str(Path(data["model"]).expanduser().resolve())
    check_values(sweep, data)
    return sweep, data
