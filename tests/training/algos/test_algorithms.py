"""Our algorithm layer against verl's functions called directly on the same inputs, plus sanity properties."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf
from verl.trainer.ppo import core_algos
from verl.trainer.ppo.ray_trainer import compute_advantage

from coding_framework.training.algos.algorithms import (
    ALGORITHMS,
    AlgorithmSpec,
    get_algorithm,
    register_algorithm,
)
from coding_framework.training.algos.losses import (
    algo_config,
    compute_advantages,
    dynamic_sampling_filter,
    policy_loss,
    rows_for_update,
    value_loss,
)
from coding_framework.training.trajectory import CallSpan, Trajectory
from coding_framework.training.verl.interop import to_data_proto

GROUPS = ["a", "a", "a", "b", "b", "b", "c", "c"]
REWARDS = [1.0, 0.0, 0.5, 1.0, 1.0, 1.0, 0.0, 1.0]


def _batch() -> tuple[torch.Tensor, torch.Tensor]:
    """(token_level_rewards, response_mask), both (8, 12): ragged rows, multi-turn holes, end rewards."""
    lengths = [12, 7, 9, 12, 5, 10, 11, 6]
    mask = torch.zeros(8, 12)
    for i, n in enumerate(lengths):
        mask[i, :n] = 1
    mask[0, 3:6] = 0  # feedback tokens between two turns
    mask[5, 2:4] = 0
    rewards = torch.zeros(8, 12)
    for i, n in enumerate(lengths):
        rewards[i, n - 1] = REWARDS[i]
    return rewards, mask


def _logprobs(seed: int = 1) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    old = -torch.rand(8, 12, generator=g) * 3  # (B, R)
    new = old + 0.4 * torch.randn(8, 12, generator=g)  # ratios well outside [0.8, 1.28] for some tokens
    adv = torch.randn(8, 12, generator=g)
    return old, new, adv


@pytest.mark.parametrize("name", ["grpo", "rloo", "reinforce_pp", "dapo"])
def test_advantages_equal_verls_trainer_dispatch(name: str) -> None:
    """Ours vs verl's own ``ray_trainer.compute_advantage`` on the DataProto our interop builds."""
    spec = get_algorithm(name)
    rewards, mask = _batch()
    ours, our_returns = compute_advantages(spec, rewards, mask, GROUPS)
    data = _data_proto(rewards, mask)
    data = compute_advantage(data, adv_estimator=spec.adv_estimator, gamma=spec.gamma, lam=spec.lam,
                             norm_adv_by_std_in_grpo=spec.norm_adv_by_std, config=algo_config(spec))
    assert torch.equal(ours, data.batch["advantages"])
    assert torch.equal(our_returns, data.batch["returns"])


def _data_proto(rewards: torch.Tensor, mask: torch.Tensor):
    """A verl batch of trajectories whose response mask and reward placement are ``mask``/``rewards``."""
    trajs = []
    for i in range(rewards.shape[0]):
        n = int(mask[i].nonzero().max()) + 1
        m = mask[i, :n].long().tolist()
        runs, start = [], None
        for t, v in enumerate([*m, 0]):
            if v and start is None:
                start = t
            elif not v and start is not None:
                runs.append((start, t - start))
                start = None
        calls = [CallSpan(turn=k, start=s, length=ln, text="", stop_reason="eos", policy_version="0")
                 for k, (s, ln) in enumerate(runs)]
        trajs.append(Trajectory(prompt_ids=[5, 6], response_ids=list(range(10, 10 + n)), response_mask=m,
                                response_logprobs=[-0.5 * v for v in m], reward=float(rewards[i].sum()),
                                group_id=GROUPS[i], calls=calls))
    data = to_data_proto(trajs, pad_token_id=0, max_response_len=rewards.shape[1])
    data.batch["token_level_rewards"] = data.batch["token_level_scores"]
    return data


def test_grpo_and_rloo_equal_verls_functions_called_directly() -> None:
    rewards, mask = _batch()
    index = np.array(GROUPS, dtype=object)
    for norm in (True, False):
        ours, _ = compute_advantages(get_algorithm("grpo", norm_adv_by_std=norm), rewards, mask, GROUPS)
        theirs, _ = core_algos.compute_grpo_outcome_advantage(rewards, mask, index,
                                                              norm_adv_by_std_in_grpo=norm)
        assert torch.equal(ours, theirs)
    ours, _ = compute_advantages(get_algorithm("rloo"), rewards, mask, GROUPS)
    assert torch.equal(ours, core_algos.compute_rloo_outcome_advantage(rewards, mask, index)[0])


def test_gae_equals_verl_and_needs_values() -> None:
    spec = get_algorithm("ppo")
    rewards, mask = _batch()
    values = torch.randn(8, 12, generator=torch.Generator().manual_seed(3))
    ours = compute_advantages(spec, rewards, mask, GROUPS, values=values)
    theirs = core_algos.compute_gae_advantage_return(rewards, values, mask, gamma=1.0, lam=0.95)
    assert all(torch.equal(a, b) for a, b in zip(ours, theirs, strict=True))
    # gamma = lam = 1, zero values: the return of every generated token is the episode's reward
    zeros = torch.zeros(8, 12)
    _, returns = compute_advantages(spec, rewards, mask, GROUPS, values=zeros, gamma=1.0, lam=1.0)
    expected = torch.tensor(REWARDS).unsqueeze(-1) * mask
    assert torch.allclose(returns * mask, expected)
    with pytest.raises(ValueError, match="needs critic values"):
        compute_advantages(spec, rewards, mask, GROUPS)


def test_grpo_advantages_are_zero_mean_within_each_group() -> None:
    rewards, mask = _batch()
    for norm in (True, False):
        adv, _ = compute_advantages(get_algorithm("grpo", norm_adv_by_std=norm), rewards, mask, GROUPS)
        per_row = adv.sum(-1) / mask.sum(-1)  # the row's constant advantage
        for g in set(GROUPS):
            rows = [i for i, x in enumerate(GROUPS) if x == g]
            assert per_row[rows].mean().abs() < 1e-6
            assert torch.allclose(adv[rows] * (1 - mask[rows]), torch.zeros(len(rows), 12))
    adv, _ = compute_advantages(get_algorithm("grpo"), rewards, mask, GROUPS)
    assert adv[0, 0] == pytest.approx((1.0 - 0.5) / (np.std([1.0, 0.0, 0.5], ddof=1) + 1e-6), rel=1e-5)


def test_rloo_is_leave_one_out() -> None:
    rewards, mask = _batch()
    adv, _ = compute_advantages(get_algorithm("rloo"), rewards, mask, GROUPS)
    for i, g in enumerate(GROUPS):
        others = [REWARDS[j] for j, x in enumerate(GROUPS) if x == g and j != i]
        assert adv[i, 0].item() == pytest.approx(REWARDS[i] - np.mean(others), abs=1e-6)


def test_reinforce_pp_whitens_over_the_batch() -> None:
    rewards, mask = _batch()
    adv, _ = compute_advantages(get_algorithm("reinforce_pp"), rewards, mask, GROUPS)
    vals = adv[mask.bool()]
    assert vals.mean().abs() < 1e-5 and vals.std().item() == pytest.approx(1.0, abs=0.01)


def test_dapo_drops_zero_variance_groups() -> None:
    keep = dynamic_sampling_filter(REWARDS, GROUPS)
    assert keep == [0, 1, 2, 6, 7]  # group b is all 1.0
    assert dynamic_sampling_filter([1.0, 1.0, 0.0], ["x", "x", "lone"]) == [2]  # a lone row has no variance
    assert rows_for_update(get_algorithm("dapo"), REWARDS, GROUPS) == keep
    assert rows_for_update(get_algorithm("grpo"), REWARDS, GROUPS) == list(range(8))


@pytest.mark.parametrize("name", ["grpo", "dapo", "ppo", "rloo"])
def test_policy_loss_equals_verl(name: str) -> None:
    spec = get_algorithm(name)
    old, new, adv = _logprobs()
    _, mask = _batch()
    loss, metrics = policy_loss(spec, old, new, adv, mask)
    # verl's explicit-argument implementation, a separate code path from the registry + ActorConfig one
    ref_loss, clipfrac, ppo_kl, clipfrac_lower = core_algos.compute_policy_loss(
        old, new, adv, mask, cliprange=spec.clip_ratio_low, cliprange_low=spec.clip_ratio_low,
        cliprange_high=spec.clip_ratio_high, clip_ratio_c=spec.clip_ratio_c, loss_agg_mode=spec.loss_agg_mode)
    assert torch.equal(loss, ref_loss)
    assert metrics["losses/clipfrac"] == pytest.approx(clipfrac.item())
    assert metrics["losses/approx_kl"] == pytest.approx(ppo_kl.item())
    assert metrics["losses/clipfrac_lower"] == pytest.approx(clipfrac_lower.item())
    # and the registry function with a plain DictConfig, as verl's trainer passes it
    cfg = OmegaConf.create({"clip_ratio": spec.clip_ratio_low, "clip_ratio_low": spec.clip_ratio_low,
                            "clip_ratio_high": spec.clip_ratio_high, "clip_ratio_c": spec.clip_ratio_c,
                            "global_batch_info": {}})
    direct, _ = core_algos.get_policy_loss_fn("vanilla")(old, new, adv, mask, spec.loss_agg_mode, cfg)
    assert torch.equal(loss, direct)
    mean_kl = ((old - new) * mask).sum().item() / mask.sum().item()
    assert metrics["losses/approx_kl"] == pytest.approx(mean_kl, rel=1e-5)


def test_clip_higher_lets_rare_tokens_grow() -> None:
    """A token whose ratio rose to 1.25 with a positive advantage: GRPO's 0.2 clip stops its gradient,
    DAPO's 0.28 upper clip does not."""
    old = torch.zeros(1, 1)
    new = torch.full((1, 1), float(np.log(1.25)), requires_grad=True)
    adv, mask = torch.ones(1, 1), torch.ones(1, 1)
    grads = {}
    for name in ("grpo", "dapo"):
        loss, metrics = policy_loss(get_algorithm(name), old, new, adv, mask)
        (grad,) = torch.autograd.grad(loss, new)
        grads[name] = (grad.item(), metrics["losses/clipfrac"])
    assert grads["grpo"] == (0.0, 1.0)
    assert grads["dapo"][0] == pytest.approx(-1.25) and grads["dapo"][1] == 0.0
    # the lower clip is unchanged: a ratio of 0.75 with a negative advantage is clipped by both
    low = torch.full((1, 1), float(np.log(0.75)), requires_grad=True)
    for name in ("grpo", "dapo"):
        loss, metrics = policy_loss(get_algorithm(name), old, low, -adv, mask)
        assert torch.autograd.grad(loss, low)[0].item() == 0.0 and metrics["losses/clipfrac"] == 1.0


def test_loss_aggregation_follows_the_spec() -> None:
    """GRPO averages token means per sequence, DAPO averages over all tokens: same losses, two scalars."""
    old, new, adv = _logprobs()
    _, mask = _batch()
    ratio = torch.exp(new - old)
    clipped = torch.maximum(-adv * ratio, -adv * torch.clamp(ratio, 0.8, 1.2))  # (B, R)
    token_losses = torch.where(adv < 0, torch.minimum(-adv * 3.0, clipped), clipped)  # dual clip
    seq_mean, _ = policy_loss(get_algorithm("grpo"), old, new, adv, mask)
    same_clip = get_algorithm("dapo", clip_ratio_high=0.2, clip_ratio_c=3.0)
    token_mean, _ = policy_loss(same_clip, old, new, adv, mask)
    per_seq = (token_losses * mask).sum(-1) / mask.sum(-1)
    assert torch.allclose(seq_mean, per_seq.mean())
    assert torch.allclose(token_mean, (token_losses * mask).sum() / mask.sum())
    assert not torch.isclose(seq_mean, token_mean)


def test_value_loss_equals_verl() -> None:
    spec = get_algorithm("ppo")
    g = torch.Generator().manual_seed(5)
    vpreds, returns, values = (torch.randn(8, 12, generator=g) for _ in range(3))
    _, mask = _batch()
    loss, metrics = value_loss(spec, vpreds, returns, values, mask)
    ref, clipfrac = core_algos.compute_value_loss(vpreds, returns, values, mask, cliprange_value=0.5)
    assert torch.equal(loss, ref) and metrics["losses/vf_clipfrac"] == pytest.approx(clipfrac.item())
    assert metrics["losses/vf_clipfrac"] > 0


def test_registry_getter_lists_names_and_takes_overrides() -> None:
    assert {"grpo", "rloo", "reinforce_pp", "ppo", "dapo"} <= set(ALGORITHMS)
    with pytest.raises(ValueError, match=r"valid algorithms: \['dapo', 'grpo'"):
        get_algorithm("a2c")
    assert get_algorithm("grpo", norm_adv_by_std=False).norm_adv_by_std is False
    with pytest.raises(ValueError, match="unknown algorithm fields"):
        get_algorithm("grpo", clip=0.3)
    with pytest.raises(ValueError, match="clip ratios"):
        get_algorithm("grpo", clip_ratio_low=1.5)
    for name in ALGORITHMS:  # every spec names things verl knows
        spec = get_algorithm(name)
        core_algos.get_adv_estimator_fn(spec.adv_estimator)
        core_algos.get_policy_loss_fn(spec.policy_loss)


def test_registering_a_new_algorithm() -> None:
    @register_algorithm("opo_test")
    def opo() -> AlgorithmSpec:
        return AlgorithmSpec(name="opo_test", adv_estimator="opo")

    try:
        rewards, mask = _batch()
        adv, _ = compute_advantages(get_algorithm("opo_test"), rewards, mask, GROUPS)
        ref, _ = core_algos.compute_opo_outcome_advantage(rewards, mask, np.array(GROUPS, dtype=object))
        assert torch.equal(adv, ref)
        with pytest.raises(ValueError, match="already registered"):
            register_algorithm("opo_test")(lambda: AlgorithmSpec(name="opo_test", adv_estimator="opo"))
    finally:
        ALGORITHMS.pop("opo_test")
