"""The policies a run trains: one shared policy (full fine-tune), or LoRA adapters per role on a frozen base.

``RolePolicies`` routes each trajectory to the weights of its role (``Trajectory.role`` ->
``PoliciesConfig.adapter_for``) and keeps one ``PolicyUpdate`` per adapter, so a role's rows move only
its adapter, with its own optimizer state, LR schedule and KL controller. It also audits each role's rows
through that role's adapter, and saves and restores the adapters with the checkpoints and the final model
(``<dir>/adapters/<name>/adapter_model.safetensors`` next to the unchanged base). In `full` mode there is
one update over all rows and every method does what the trainer did before adapters existed.
"""

from __future__ import annotations

import contextlib
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
from transformers import PreTrainedModel

from coding_framework.config.training import TrainingConfig
from coding_framework.llm.adapters import RoleAdapters, base_state_dict
from coding_framework.llm.local import LocalEngine
from coding_framework.models import ADAPTERS_DIR
from coding_framework.training.algos.algorithms import AlgorithmSpec
from coding_framework.training.algos.losses import rows_for_update
from coding_framework.training.algos.seeds import derive_seed
from coding_framework.training.auditor import AuditReport, audit
from coding_framework.training.batch import TrajectoryBatch
from coding_framework.training.rollouts.engines.base import PolicySnapshot
from coding_framework.training.trajectory import Trajectory
from coding_framework.training.update import PolicyUpdate

__all__ = ["SHARED", "RolePolicies"]

SHARED = ""  # the key of the one update in `full` mode


class RolePolicies:
    """The updates of one run over ``engine``'s model; attaches the adapters ``config.policies`` asks for."""

    def __init__(self, engine: LocalEngine, model: PreTrainedModel, spec: AlgorithmSpec,
                 config: TrainingConfig) -> None:
        self.config, self.model = config, model
        self.adapters: RoleAdapters | None = None
        if config.policies.uses_adapters:
            self.adapters = RoleAdapters(model, config.policies, derive_seed(config.seed, "lora"))
            engine.attach_adapters(self.adapters)
        names = self.adapters.names if self.adapters is not None else [SHARED]
        self.updates: dict[str, PolicyUpdate] = {}
        for name in names:
            params = self.adapters.parameters(name) if self.adapters is not None else None
            self.updates[name] = PolicyUpdate(model, spec, config.algo, config.optim, config.kl,
                                              config.steps, config.seed, params=params)

    @property
    def primary(self) -> PolicyUpdate:
        """The first update: the shared policy's, or the first adapter's (its KL monitor stops the run)."""
        return next(iter(self.updates.values()))

    def key_for(self, role: str) -> str | None:
        """The update ``role``'s rows train; None: the role's calls run on the frozen base (not trained)."""
        return SHARED if self.adapters is None else self.adapters.adapter_for(role)

    def split(self, rows: Sequence[Trajectory]) -> dict[str, list[Trajectory]]:
        """Rows per update, in update order; rows of roles without weights of their own are dropped."""
        out: dict[str, list[Trajectory]] = {name: [] for name in self.updates}
        for row in rows:
            key = self.key_for(row.role)
            if key is not None:
                out[key].append(row)
        return out

    def step(self, spec: AlgorithmSpec, rows: Sequence[Trajectory], pad_id: int, step: int,
             behaviour: PolicySnapshot | None = None) -> dict[str, float]:
        """Each update's gradient steps on its rows. `full` mode's metrics keep their names; an adapter's
        are prefixed with ``<adapter>/``, but for ``seconds/*``, summed over the updates. ``behaviour``: the
        weights that sampled ``rows`` when they are not the current ones; the trainer's logprobs under
        them measure and correct the mismatch (``offpolicy``). Sampled by the current weights and updated
        on-policy, the update measures the mismatch in its own gradient pass instead of a forward of its
        own (``PolicyUpdate.measures_mismatch_in_its_pass``)."""
        metrics: dict[str, float] = {}
        seconds: dict[str, float] = defaultdict(float)  # summed over the updates
        for name, own in self.split(rows).items():
            keep = rows_for_update(spec, [t.reward for t in own], [t.group_id for t in own])
            prefix = f"{name}/" if name else ""
            metrics[f"{prefix}rows_used"] = float(len(keep))
            if not keep:
                continue
            batch = TrajectoryBatch.from_trajectories([own[i] for i in keep], pad_id)
            update = self.updates[name]
            in_its_pass = behaviour is None and update.measures_mismatch_in_its_pass
            with self._selected(name):
                started = time.perf_counter()
                sampled_by = None
                if not in_its_pass:
                    with self.weights_of(behaviour):
                        sampled_by = update.logprobs(batch)
                seconds["behaviour_forward"] += time.perf_counter() - started
                found = update.step(batch, step, behaviour=sampled_by, measure_mismatch=in_its_pass)
            for key in [k for k in found if k.startswith("seconds/")]:
                seconds[key.removeprefix("seconds/")] += found.pop(key)
            metrics.update({f"{prefix}{k}": v for k, v in found.items()})
        if self.adapters is not None:
            metrics.update(_across_updates(metrics, self.adapters.names))
        return {**metrics, **{f"seconds/{k}": v for k, v in seconds.items()}}

    def _selected(self, name: str) -> contextlib.AbstractContextManager[None]:
        return self.adapters.using(name) if self.adapters is not None else contextlib.nullcontext()

    # -- policy versions -------------------------------------------------------------------------------

    def snapshot(self) -> PolicySnapshot:
        """CPU copies of the trained weights: each adapter's, or the whole model's under ``""``."""
        if self.adapters is None:
            states = {SHARED: self.model.state_dict()}
        else:
            states = {name: self.adapters.state_dict(name) for name in self.adapters.names}
        return {name: {k: v.detach().to("cpu", copy=True) for k, v in state.items()}
                for name, state in states.items()}

    def load_snapshot(self, snapshot: PolicySnapshot) -> None:
        with torch.no_grad():
            if self.adapters is None:
                self.model.load_state_dict(snapshot[SHARED], strict=True)
                return
            for name, state in snapshot.items():
                self.adapters.load_state_dict(name, state)

    @contextlib.contextmanager
    def weights_of(self, snapshot: PolicySnapshot | None) -> Iterator[None]:
        """The block runs with ``snapshot``'s weights (None: the current ones), which come back after."""
        if snapshot is None:
            yield
            return
        current = self.snapshot()
        self.load_snapshot(snapshot)
        try:
            yield
        finally:
            self.load_snapshot(current)

    def audit(self, rows: Sequence[Trajectory], tokenizer: Any, tolerance: float) -> dict[str, AuditReport]:
        """Teacher-force each role's rows through that role's weights (its adapter, or the base)."""
        by_role: dict[str, list[Trajectory]] = {}
        for row in rows:
            by_role.setdefault(row.role, []).append(row)
        reports = {}
        for role, own in sorted(by_role.items()):
            if self.adapters is None:
                reports[role] = audit(own, self.model, tokenizer, tolerance)
            else:
                with self.adapters.using(self.adapters.adapter_for(role)):
                    reports[role] = audit(own, self.model, tokenizer, tolerance)
        return reports

    # -- saving ------------------------------------------------------------------------------------------

    def save_model(self, directory: Path, tokenizer: Any) -> None:
        """The policy as a Hugging Face directory: the model, or the frozen base plus ``adapters/<name>/``."""
        if self.adapters is None:
            self.model.save_pretrained(directory)
        else:
            self.model.save_pretrained(directory, state_dict=base_state_dict(self.model))
            self.adapters.save(directory / ADAPTERS_DIR)
        tokenizer.save_pretrained(directory)

    def load_adapters(self, directory: Path) -> None:
        """Restore the adapters from ``save_model``'s layout (the base is frozen and was never changed)."""
        assert self.adapters is not None
        self.adapters.load(directory / ADAPTERS_DIR)

    def state_dict(self) -> dict[str, Any]:
        if self.adapters is None:
            return self.primary.state_dict()  # the checkpoint format of runs without adapters
        return {name: update.state_dict() for name, update in self.updates.items()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if self.adapters is None:
            self.primary.load_state_dict(state)
            return
        for name, update in self.updates.items():
            update.load_state_dict(state[name])


def _across_updates(metrics: dict[str, float], names: Sequence[str]) -> dict[str, float]:
    """The run-level ``mismatch/*``: the largest ratio of any adapter's rows, the mean of the rest."""
    out: dict[str, float] = {}
    for key in ("mismatch/kl", "mismatch/ratio_mean", "mismatch/ratio_max", "mismatch/masked_share"):
        values = [metrics[f"{name}/{key}"] for name in names if f"{name}/{key}" in metrics]
        if values:
            out[key] = max(values) if key.endswith("_max") else sum(values) / len(values)
    return out
