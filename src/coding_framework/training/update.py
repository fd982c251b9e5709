"""One policy update on a rollout batch: advantages from the registry's estimator, the registry's policy
loss, optional critic and KL terms, gradient accumulation over micro-batches and gradient clipping.

Nothing here branches on the algorithm's name: the ``AlgorithmSpec`` says whether a critic is trained
and how losses aggregate; ``losses`` calls verl's estimator and loss for it. Everything runs on the
policy's device: the critic is created there and each batch is moved there before it is scored.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, cast

import torch
from transformers import PreTrainedModel
from verl.trainer.ppo import core_algos

from coding_framework.config.kl import KLConfig
from coding_framework.config.training import AlgoConfig, OptimConfig
from coding_framework.training.algos.algorithms import AlgorithmSpec
from coding_framework.training.algos.kl import (
    KLMonitor,
    ReferencePolicy,
    kl_in_reward,
    kl_loss,
    kl_per_token,
    make_controller,
)
from coding_framework.training.algos.losses import compute_advantages, policy_loss, value_loss
from coding_framework.training.algos.offpolicy import correct, mismatch_metrics
from coding_framework.training.algos.schedule import lr_factor
from coding_framework.training.algos.seeds import derive_seed
from coding_framework.training.algos.value_head import ValueHead
from coding_framework.training.batch import TrajectoryBatch, last_token_rewards, score


@dataclass
class Prepared:
    """What the update needs besides the batch, all (B, R) and without grad."""

    advantages: torch.Tensor
    returns: torch.Tensor
    values: torch.Tensor | None
    ref_logprobs: torch.Tensor | None
    is_weights: torch.Tensor | None = None  # off-policy correction weights (TIS)


def _chunks(rows: Sequence[int], size: int) -> list[list[int]]:
    return [list(rows[i : i + size]) for i in range(0, len(rows), size)]


def _trim(t: torch.Tensor, rows: list[int], width: int) -> torch.Tensor:
    return t[rows, :width]


def _on(batch: TrajectoryBatch, device: torch.device) -> TrajectoryBatch:
    """``batch`` with its tensors on ``device`` (itself, tensor for tensor, when they already are)."""
    moved = {
        f.name: getattr(batch, f.name).to(device)
        for f in dataclasses.fields(batch)
        if isinstance(getattr(batch, f.name), torch.Tensor)
    }
    return dataclasses.replace(batch, prompts=[p.to(device) for p in batch.prompts], **moved)


def _micro_weight(mode: str, micro_mask: torch.Tensor, mini_mask: torch.Tensor) -> float:
    """The share of a mini-batch's loss one micro-batch carries, so accumulated gradients equal the
    mini-batch's: token shares for token-mean aggregation, row shares for per-sequence means."""
    if mode == "token-mean":
        return float(micro_mask.sum() / mini_mask.sum().clamp(min=1))
    if mode.startswith("seq-mean"):
        return micro_mask.shape[0] / mini_mask.shape[0]
    return 1.0


class PolicyUpdate:
    """Owns the optimizers, LR schedules, reference policy, critic and KL controller of one run.

    ``params`` are the tensors the optimizer moves (default: all of the model's); a LoRA adapter passes
    its own, and scoring then runs through whichever adapter is selected on the model.
    """

    def __init__(
        self,
        model: PreTrainedModel,
        spec: AlgorithmSpec,
        algo: AlgoConfig,
        optim: OptimConfig,
        kl: KLConfig,
        total_steps: int,
        seed: int,
        params: Sequence[torch.nn.Parameter] | None = None,
    ) -> None:
        self.model, self.spec, self.algo, self.optim, self.kl = model, spec, algo, optim, kl
        self.seed = seed
        self.device = next(model.parameters()).device
        self.params = list(model.parameters()) if params is None else list(params)
        steps = total_steps * algo.epochs * algo.minibatches
        self.optimizer = torch.optim.AdamW(
            self.params,
            lr=optim.lr,
            betas=optim.betas,
            eps=optim.eps,
            weight_decay=optim.weight_decay,
        )
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda s: lr_factor(s, steps, optim)
        )
        # The critic is a value head on the policy's (detached) hidden states: one trunk forward serves
        # both, and value gradients never move the policy.
        self.critic: ValueHead | None = None
        self.critic_optimizer: torch.optim.Optimizer | None = None
        if spec.needs_critic:
            self.critic = ValueHead(model.config.hidden_size).to(self.device)
            self.critic_optimizer = torch.optim.AdamW(self.critic.parameters(), lr=optim.critic_lr)
        if optim.gradient_checkpointing:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        keep_reference = kl.mode != "none" or kl.stop_kl is not None
        self.reference = cast(PreTrainedModel, ReferencePolicy(model).model) if keep_reference else None
        self.controller = make_controller(kl)
        self.monitor = KLMonitor.from_config(kl)
        # One step's bookkeeping: the gradient pass's own logprobs (``measure_mismatch``) and phase times.
        self._seen: torch.Tensor | None = None
        self._seen_rows = torch.zeros(0, dtype=torch.bool)
        self._timing: dict[str, float] = defaultdict(float)
        self._rows_skipped = 0

    # -- before the gradient steps -----------------------------------------------------------------------

    @torch.no_grad()
    def prepare(self, batch: TrajectoryBatch) -> tuple[Prepared, dict[str, float]]:
        """Reference logprobs, critic values, KL-shaped token rewards and advantages for ``batch``."""
        metrics: dict[str, float] = {}
        batch = _on(batch, self.device)
        with self._autocast():
            ref = self._forward_all(batch, self.reference) if self.reference is not None else None
            values = self._values_all(batch) if self.critic is not None else None
        scores = last_token_rewards(batch, batch.rewards)  # (B, R)
        mask = batch.response_mask
        if ref is not None:
            kld = kl_per_token(batch.old_logprobs, ref, self.kl.estimator) * mask
            metrics["kl/ref"] = float(kld.sum() / mask.sum().clamp(min=1))
            if self.kl.mode == "reward":
                scores, m = kl_in_reward(
                    scores, batch.old_logprobs, ref, mask, self.controller, self.kl.estimator
                )
                metrics.update(m)
        advantages, returns = compute_advantages(self.spec, scores, mask, batch.group_ids, values)
        metrics["charts/advantage_abs_mean"] = float(
            (advantages.abs() * mask).sum() / mask.sum().clamp(min=1)
        )
        return Prepared(advantages, returns, values, ref), metrics

    def _forward_all(self, batch: TrajectoryBatch, model: PreTrainedModel) -> torch.Tensor:
        out = torch.zeros_like(batch.old_logprobs)
        for rows in _chunks(range(len(batch)), self.optim.micro_batch_size):
            sub = batch.select(rows)
            out[rows, : sub.response_mask.shape[1]] = score(model, sub).logprobs
        return out

    def _values_all(self, batch: TrajectoryBatch) -> torch.Tensor:
        assert self.critic is not None
        out = torch.zeros_like(batch.old_logprobs)
        for rows in _chunks(range(len(batch)), self.optim.micro_batch_size):
            sub = batch.select(rows)
            out[rows, : sub.response_mask.shape[1]] = (
                self.critic(score(self.model, sub).hidden) * sub.response_mask
            )
        return out

    # -- the gradient steps --------------------------------------------------------------------------------

    @torch.no_grad()
    def logprobs(self, batch: TrajectoryBatch) -> torch.Tensor:
        """(B, R) the trainer's logprobs of ``batch`` under the weights selected now (no grad)."""
        batch = _on(batch, self.device)
        with self._autocast():
            return self._forward_all(batch, self.model)

    @property
    def measures_mismatch_in_its_pass(self) -> bool:
        """Whether ``step(..., measure_mismatch=True)`` can take the trainer's logprobs of the sampling
        weights from its own gradient pass: one epoch of one minibatch (no row is scored after an optimizer
        step) and no correction (those logprobs would be an input of the loss, not only a measurement)."""
        a = self.algo
        return a.epochs == 1 and a.minibatches == 1 and a.off_policy_correction == "none"

    def step(self, batch: TrajectoryBatch, step: int, behaviour: torch.Tensor | None = None,
             measure_mismatch: bool = False) -> dict[str, float]:
        """``epochs`` passes over ``batch`` in ``minibatches`` optimizer steps each; the step's metrics.

        ``behaviour``: (B, R) the trainer's logprobs under the policy version that sampled the batch
        (``logprobs`` with those weights): the mismatch to the recorded ones is measured and, with
        ``algo.off_policy_correction``, corrected (``offpolicy``). ``measure_mismatch`` (the current weights
        sampled the batch, and ``measures_mismatch_in_its_pass``): the same mismatch metrics from the
        gradient pass's own logprobs, over the rows it scores, without a separate forward pass.

        Micro-batches whose every advantage is exactly 0 are skipped when nothing else in the loss can move
        the weights (no entropy bonus, KL loss or critic): their gradient is exactly 0, so the weights come
        out bit for bit as if they had run. The ``losses/*`` metrics are then over the micro-batches that
        ran (``charts/rows_skipped`` counts the others).
        """
        started = time.perf_counter()
        batch = _on(batch, self.device)
        prepared, metrics = self.prepare(batch)
        metrics["seconds/prepare"] = time.perf_counter() - started
        self._seen = torch.zeros_like(batch.old_logprobs) if measure_mismatch else None
        self._seen_rows = torch.zeros(len(batch), dtype=torch.bool)
        self._timing, self._rows_skipped = defaultdict(float), 0
        if behaviour is not None:
            behaviour = behaviour.to(self.device)
            metrics.update(mismatch_metrics(batch.old_logprobs, behaviour, batch.response_mask))
            fix = correct(self.algo, batch.old_logprobs, behaviour, batch.response_mask)
            metrics["mismatch/masked_share"] = fix.masked_share
            batch = dataclasses.replace(batch, old_logprobs=fix.old_logprobs, response_mask=fix.response_mask)
            prepared = dataclasses.replace(prepared, is_weights=fix.is_weights)
        sums: dict[str, list[float]] = defaultdict(list)
        for epoch in range(self.algo.epochs):
            gen = torch.Generator().manual_seed(derive_seed(self.seed, "minibatch", step, epoch))
            order = torch.randperm(len(batch), generator=gen).tolist()
            size = -(-len(order) // self.algo.minibatches)
            for mini in _chunks(order, size):
                for k, v in self._minibatch(batch, prepared, mini).items():
                    sums[k].append(v)
        metrics.update({k: sum(v) / len(v) for k, v in sums.items()})
        metrics["charts/rows_skipped"] = float(self._rows_skipped)
        metrics.update({f"seconds/{k}": v for k, v in self._timing.items()})
        if self._seen is not None:
            scored = batch.response_mask * self._seen_rows.to(self.device).unsqueeze(-1)
            metrics.update(mismatch_metrics(batch.old_logprobs, self._seen, scored))
        metrics["charts/lr"] = float(self.scheduler.get_last_lr()[0])
        metrics["kl/coef"] = float(self.controller.value)
        return metrics

    def _minibatch(self, batch: TrajectoryBatch, prepared: Prepared, rows: list[int]) -> dict[str, float]:
        self.optimizer.zero_grad(set_to_none=True)
        if self.critic_optimizer is not None:
            self.critic_optimizer.zero_grad(set_to_none=True)
        mini_mask = batch.response_mask[rows]
        sums: dict[str, float] = defaultdict(float)
        ran, skipped = 0.0, False
        rows = sorted(rows, key=lambda i: int(batch.prompt_index[i]))  # a group's rows share one prompt pass
        started = time.perf_counter()
        for micro in _chunks(rows, self.optim.micro_batch_size):
            if self._gradient_free(prepared, micro):
                self._rows_skipped += len(micro)
                skipped = True
                continue
            sub = batch.select(micro)
            weight = _micro_weight(self.spec.loss_agg_mode, sub.response_mask, mini_mask)
            loss, m = self._loss(sub, prepared, micro)
            (loss * weight).backward()
            ran += weight
            for k, v in m.items():
                sums[k] += v * weight
        if skipped and ran:  # the metrics of the micro-batches that ran, weighted as if they were all
            sums = defaultdict(float, {k: v / ran for k, v in sums.items()})
        if not ran:  # the optimizer still steps (moments decay, weights decay), as on zero gradients
            for p in self.params:
                p.grad = torch.zeros_like(p)
        self._timing["forward_backward"] += time.perf_counter() - started
        started = time.perf_counter()
        if self.optim.grad_clip is not None:
            norm = torch.nn.utils.clip_grad_norm_(self.params, self.optim.grad_clip)
        else:
            norm = torch.linalg.vector_norm(
                torch.stack([p.grad.norm() for p in self.params if p.grad is not None])
            )
        self.optimizer.step()
        self.scheduler.step()
        if self.critic_optimizer is not None:
            self.critic_optimizer.step()
        self._timing["optimizer"] += time.perf_counter() - started
        sums["charts/grad_norm"] = float(norm)
        return dict(sums)

    def _gradient_free(self, prepared: Prepared, rows: list[int]) -> bool:
        """Whether these rows' loss has an exactly-zero gradient: every advantage 0 and no other term."""
        if self.algo.entropy_coef or self.critic is not None or self.kl.mode == "loss":
            return False
        return not bool(prepared.advantages[rows].any())

    def _loss(
        self, sub: TrajectoryBatch, prepared: Prepared, rows: list[int]
    ) -> tuple[torch.Tensor, dict[str, float]]:
        width = sub.response_mask.shape[1]
        mask = sub.response_mask
        with self._autocast(), self._checkpointing():
            scored = score(self.model, sub, entropy=True, checkpointed=self.optim.gradient_checkpointing)
        assert scored.entropy is not None  # asked for
        if self._seen is not None:
            self._seen[rows, :width] = scored.logprobs.detach()
            self._seen_rows[rows] = True
        adv = _trim(prepared.advantages, rows, width)
        weights = None if prepared.is_weights is None else _trim(prepared.is_weights, rows, width)
        loss, metrics = policy_loss(self.spec, sub.old_logprobs, scored.logprobs, adv, mask, weights)
        entropy = core_algos.agg_loss(
            loss_mat=scored.entropy, loss_mask=mask, loss_agg_mode=self.spec.loss_agg_mode
        )
        metrics["losses/entropy"] = float(entropy.detach())
        loss = loss - self.algo.entropy_coef * entropy
        if self.kl.mode == "loss" and prepared.ref_logprobs is not None:
            kl_term, m = kl_loss(
                scored.logprobs,
                _trim(prepared.ref_logprobs, rows, width),
                mask,
                self.kl.estimator,
                self.spec.loss_agg_mode,
            )
            loss = loss + self.controller.value * kl_term
            metrics.update(m)
        if self.critic is not None and prepared.values is not None:
            vpreds = self.critic(scored.hidden.detach())  # (B, R): the critic does not move the policy
            v_loss, m = value_loss(
                self.spec,
                vpreds,
                _trim(prepared.returns, rows, width),
                _trim(prepared.values, rows, width),
                mask,
            )
            loss = loss + self.algo.value_coef * v_loss
            metrics.update(m)
        metrics["losses/total"] = float(loss.detach())
        return loss, metrics

    def _autocast(self) -> contextlib.AbstractContextManager[object]:
        """bf16 autocast on CUDA when ``optim.precision`` asks (the config refuses it elsewhere)."""
        if self.optim.precision == "bf16":
            return torch.autocast(self.device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    @contextlib.contextmanager
    def _checkpointing(self) -> Iterator[None]:
        """Gradient checkpointing recomputes layers only in train mode; the policy otherwise stays in eval
        mode (it samples too), so the gradient forward switches for its duration."""
        if not self.optim.gradient_checkpointing:
            yield
            return
        self.model.train()
        try:
            yield
        finally:
            self.model.eval()

    # -- checkpointing ---------------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "kl_coef": float(self.controller.value),
            "kl_monitor": {"over": self.monitor.over, "reason": self.monitor.reason},
        }
        if self.critic is not None and self.critic_optimizer is not None:
            state["critic"] = self.critic.state_dict()
            state["critic_optimizer"] = self.critic_optimizer.state_dict()
        if self.reference is not None:
            state["reference"] = self.reference.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.controller.value = state["kl_coef"]
        self.monitor.over = state["kl_monitor"]["over"]
        self.monitor.reason = state["kl_monitor"]["reason"]
        if self.critic is not None and self.critic_optimizer is not None:
            self.critic.load_state_dict(state["critic"])
            self.critic_optimizer.load_state_dict(state["critic_optimizer"])
        if self.reference is not None:
            self.reference.load_state_dict(state["reference"])
