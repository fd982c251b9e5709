"""The mismatch metrics and the two corrections (verl's rollout-correction helpers) on known ratios."""

from __future__ import annotations

import math

import pytest
import torch

from coding_framework.config.training import AlgoConfig
from coding_framework.training.algos.offpolicy import correct, mismatch_metrics


def _logprobs() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    recorded = torch.full((3, 4), -1.0)
    behaviour = recorded.clone()
    behaviour[0, 0] += math.log(3.0)  # one token the trainer finds 3x likelier
    behaviour[1] += math.log(4.0)  # a whole row 4x likelier: its geometric mean ratio is 4
    mask = torch.ones(3, 4)
    mask[2, 3] = 0
    return recorded, behaviour, mask


def test_mismatch_metrics_measure_the_ratio_on_generated_tokens() -> None:
    recorded, behaviour, mask = _logprobs()
    m = mismatch_metrics(recorded, behaviour, mask)
    assert m["mismatch/ratio_max"] == pytest.approx(4.0)
    assert m["mismatch/ratio_mean"] == pytest.approx((3 + 3 * 1 + 4 * 4 + 3 * 1) / 11)
    assert m["mismatch/kl"] == pytest.approx(-(math.log(3) + 4 * math.log(4)) / 11)
    assert mismatch_metrics(recorded, recorded, mask) == {
        "mismatch/kl": 0.0, "mismatch/ratio_mean": 1.0, "mismatch/ratio_max": 1.0}


def test_none_keeps_the_recorded_policy() -> None:
    recorded, behaviour, mask = _logprobs()
    fix = correct(AlgoConfig(), recorded, behaviour, mask)
    assert fix.old_logprobs is recorded and fix.response_mask is mask and fix.is_weights is None


def test_tis_caps_token_weights_and_uses_the_trainer_as_old_policy() -> None:
    recorded, behaviour, mask = _logprobs()
    fix = correct(AlgoConfig(off_policy_correction="tis", tis_cap=2.0), recorded, behaviour, mask)
    assert fix.old_logprobs is behaviour
    assert fix.is_weights is not None
    assert fix.is_weights[0, 0] == pytest.approx(2.0) and fix.is_weights[0, 1] == pytest.approx(1.0)
    assert torch.allclose(fix.is_weights[1], torch.full((4,), 2.0))
    assert fix.is_weights[2, 3] == 0  # padding
    assert fix.masked_share == pytest.approx(5 / 11)  # the tokens whose weight hit the cap


def test_mis_masks_whole_sequences_outside_the_bounds() -> None:
    recorded, behaviour, mask = _logprobs()
    fix = correct(AlgoConfig(off_policy_correction="mis", mis_bounds=(0.5, 2.0)), recorded, behaviour, mask)
    assert fix.is_weights is None and fix.old_logprobs is behaviour
    assert fix.response_mask[1].sum() == 0  # geometric mean 4 > 2
    assert fix.response_mask[0].sum() == 4  # geometric mean 3 ** (1/4) ~ 1.32 stays
    assert torch.equal(fix.response_mask[2], mask[2])
    assert fix.masked_share == pytest.approx(4 / 11)
