"""The preflight's verl config (verl's own ``ppo_trainer`` composed with hydra) and the problems it finds
in it, before the run (settings) and after (what the episodes actually used)."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from coding_framework.training.algos.algorithms import AlgorithmSpec


def verl_config_dir() -> Path:
    import verl

    return Path(verl.__file__).resolve().parent / "trainer" / "config"


def base_overrides(*, model_dir: Path, loop_config: Path, spec: AlgorithmSpec, problems: int, n: int,
                   workers: int, prompt_length: int, response_length: int,
                   send_role: bool = False) -> list[str]:
    """What the preflight sets on verl's config; the user's overrides come after and win. ``send_role``:
    the agent loop passes each call's role to the token servers (a model with role adapters)."""
    from coding_framework.training.verl.agent_loop import AGENT_NAME

    rollout = "actor_rollout_ref.rollout"
    return [
        "trainer.use_v1=false", f"actor_rollout_ref.model.path={model_dir}",
        f"{rollout}.name=vllm", f"{rollout}.mode=async", f"{rollout}.calculate_log_probs=true",
        f"{rollout}.n={n}",
        f"{rollout}.agent.num_workers={workers}", f"{rollout}.agent.agent_loop_config_path={loop_config}",
        f"{rollout}.agent.default_agent_loop={AGENT_NAME}",
        f"data.train_batch_size={problems}", f"data.max_prompt_length={prompt_length}",
        f"data.max_response_length={response_length}",
        f"algorithm.adv_estimator={spec.adv_estimator}", f"algorithm.gamma={spec.gamma}",
        f"algorithm.lam={spec.lam}", f"algorithm.norm_adv_by_std_in_grpo={spec.norm_adv_by_std}",
        *([f"+{AGENT_NAME}.send_role=true"] if send_role else []),
    ]


def compose_verl_config(overrides: Sequence[str]) -> DictConfig:
    """verl's ``ppo_trainer`` config with ``overrides``; a bad override raises ``ValueError`` (one line)."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    try:
        with initialize_config_dir(config_dir=str(verl_config_dir()), version_base=None):
            return compose("ppo_trainer", overrides=list(overrides))
    except (HydraException, OmegaConfBaseException) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(f"verl config: {first}") from None


def unsupported(config: DictConfig) -> str | None:
    """A sampling setting the token servers cannot honour (vLLM can): the preflight would fail on it."""
    rollout = config.actor_rollout_ref.rollout
    if rollout.top_k not in (-1, 0):
        return f"actor_rollout_ref.rollout.top_k={rollout.top_k}: the preflight's token servers sample " \
               "without top-k; run it with top_k=-1"
    return None


def settings_problems(config: DictConfig, spec: AlgorithmSpec, model_positions: int | None) -> list[str]:
    """Settings that would break or skew a verl job, found without running anything."""
    rollout = config.actor_rollout_ref.rollout
    found = []
    if config.trainer.get("use_v1", False) and importlib.util.find_spec("transfer_queue") is None:
        found.append("trainer.use_v1=true needs TransferQueue, which is not installed: "
                     "set trainer.use_v1=false")
    if rollout.mode != "async":
        found.append(f"actor_rollout_ref.rollout.mode={rollout.mode}: agent loops need mode=async")
    if not rollout.calculate_log_probs:
        found.append("actor_rollout_ref.rollout.calculate_log_probs=false: verl keeps no rollout logprobs "
                     "(rollout correction and this audit need them); set it to true")
    if rollout.temperature != 1.0 or rollout.top_p != 1.0:
        found.append(f"rollout temperature={rollout.temperature}, top_p={rollout.top_p}: the recorded "
                     "logprobs are the model's temperature-1 distribution, while verl's actor computes "
                     "tempered ones; compare them only at temperature 1, top_p 1")
    length = rollout.prompt_length + rollout.response_length
    if model_positions is not None and length > model_positions:
        found.append(f"prompt_length + response_length = {length} exceeds the model's {model_positions} "
                     "positions; lower data.max_response_length")
    if spec.needs_critic:
        found.append(f"{spec.name} trains a critic: the preflight computes {spec.adv_estimator} with zero "
                     "values (only main_ppo's critic workers produce real ones)")
    return found


def usage_problems(config: DictConfig, metadata: Sequence[dict[str, Any]], prompt_lengths: Sequence[int],
                   response_lengths: Sequence[int]) -> list[str]:
    """What the episodes ran into: responses cut by ``response_length``, prompts near ``prompt_length``."""
    rollout = config.actor_rollout_ref.rollout
    found = []
    cut = sum(bool(m.get("response_budget_exhausted")) for m in metadata)
    if cut:
        found.append(f"{cut} of {len(metadata)} episodes ran out of rollout.response_length="
                     f"{rollout.response_length} tokens (longest response {max(response_lengths)}); raise "
                     "data.max_response_length so that every round fits")
    if max(prompt_lengths) > 0.9 * rollout.prompt_length:
        found.append(f"the longest prompt has {max(prompt_lengths)} of rollout.prompt_length="
                     f"{rollout.prompt_length} tokens; longer problems will be refused")
    return found
