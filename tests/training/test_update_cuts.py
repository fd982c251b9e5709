"""What the update leaves out leaves the weights bit for bit the same: micro-batches whose advantages are all
exactly 0, and, on-policy, the separate forward pass that measured the trainer/sampler mismatch."""

from __future__ import annotations

import pytest
import torch

from coding_framework.config.training import AlgoConfig, OptimConfig
from coding_framework.embedded.architecture import init_model
from coding_framework.testing.engine import tiny_tokenizer
from coding_framework.testing.models import TINY
from coding_framework.training.algos.algorithms import get_algorithm
from coding_framework.training.algos.kl import KLConfig
from coding_framework.training.batch import TrajectoryBatch
from coding_framework.training.update import PolicyUpdate
from tests.training.test_trainer import _sampled_rows, _trajectory

GROUP = 4


def _batch(rewards_per_group: list[list[float]]) -> TrajectoryBatch:
    """One group per prompt (each group's own prompt, so micro-batches of GROUP rows are whole groups)."""
    sampled = _sampled_rows(init_model(TINY, tiny_tokenizer(), 0), GROUP * len(rewards_per_group), 6, seed=5)
    rows = []
    for g, rewards in enumerate(rewards_per_group):
        for i, reward in enumerate(rewards):
            prompt, gen = sampled[g * GROUP + i]
            rows.append(_trajectory(prompt + prompt[-1:] * g, gen, reward, f"g{g}"))
    return TrajectoryBatch.from_trajectories(rows, tiny_tokenizer().pad_token_id)


def _train(batches: list[TrajectoryBatch], skip: bool, monkeypatch: pytest.MonkeyPatch,
           **algo: float) -> tuple[torch.Tensor, list[dict[str, float]]]:
    if not skip:
        monkeypatch.setattr(PolicyUpdate, "_gradient_free", lambda self, prepared, rows: False)
    model = init_model(TINY, tiny_tokenizer(), 0)
    optim = OptimConfig(lr=3e-3, micro_batch_size=GROUP, weight_decay=0.01)
    update = PolicyUpdate(model, get_algorithm("grpo"), AlgoConfig(**algo), optim, KLConfig(), 10, seed=0)
    metrics = [update.step(batch, step) for step, batch in enumerate(batches)]
    monkeypatch.undo()
    return torch.cat([p.detach().flatten() for p in model.parameters()]), metrics


def test_skipping_flat_groups_leaves_the_weights_bit_identical(monkeypatch: pytest.MonkeyPatch) -> None:
    # A flat group at 0, a mixed one, a flat group at 1; then a step whose every group is flat (nothing
    # runs, yet AdamW's moments and weight decay still move the weights, as they do on zero gradients).
    batches = [_batch([[0.0] * GROUP, [1.0, 0.0, 0.0, 1.0], [1.0] * GROUP]), _batch([[0.0] * GROUP] * 2)]
    skipped, metrics = _train(batches, True, monkeypatch)
    full, full_metrics = _train(batches, False, monkeypatch)
    assert torch.equal(skipped, full)
    assert [m["charts/rows_skipped"] for m in metrics] == [2 * GROUP, 2 * GROUP]
    assert [m["charts/rows_skipped"] for m in full_metrics] == [0, 0]
    assert metrics[1]["charts/grad_norm"] == full_metrics[1]["charts/grad_norm"] == 0.0
    before = torch.cat([p.detach().flatten() for p in init_model(TINY, tiny_tokenizer(), 0).parameters()])
    assert not torch.equal(skipped, before)


def test_an_entropy_bonus_keeps_every_micro_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    batch = _batch([[0.0] * GROUP, [1.0, 0.0, 0.0, 1.0]])
    _, metrics = _train([batch], True, monkeypatch, entropy_coef=0.01)
    assert metrics[0]["charts/rows_skipped"] == 0


def test_the_mismatch_measured_in_the_gradient_pass_equals_a_separate_forward() -> None:
    batch = _batch([[0.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 1.0]])
    weights, found = [], []
    for in_its_pass in (True, False):
        model = init_model(TINY, tiny_tokenizer(), 0)
        update = PolicyUpdate(model, get_algorithm("grpo"), AlgoConfig(), OptimConfig(micro_batch_size=GROUP),
                              KLConfig(), 10, seed=0)
        assert update.measures_mismatch_in_its_pass
        behaviour = None if in_its_pass else update.logprobs(batch)
        found.append(update.step(batch, 0, behaviour=behaviour, measure_mismatch=in_its_pass))
        weights.append(torch.cat([p.detach().flatten() for p in model.parameters()]))
    assert torch.equal(weights[0], weights[1])
    for key in ("mismatch/kl", "mismatch/ratio_mean", "mismatch/ratio_max"):
        assert found[0][key] == pytest.approx(found[1][key], abs=1e-6), key
    assert found[0]["mismatch/ratio_max"] > 1.0  # the recorded logprobs are another prompt's: a real gap


def test_only_one_epoch_of_one_minibatch_without_correction_measures_in_its_pass() -> None:
    model = init_model(TINY, tiny_tokenizer(), 0)
    for algo in (AlgoConfig(epochs=2), AlgoConfig(minibatches=2), AlgoConfig(off_policy_correction="tis")):
        update = PolicyUpdate(model, get_algorithm("grpo"), algo, OptimConfig(), KLConfig(), 10, seed=0)
        assert not update.measures_mismatch_in_its_pass
