"""The RL engine's parts: lockstep rollouts, reward shaping, the registry-driven update, schedules."""

from __future__ import annotations

import asyncio
import itertools
import math

import pytest
import torch

from coding_framework.config import ConfigError
from coding_framework.config.graph import WorkflowConfig
from coding_framework.config.rewards import RewardConfig
from coding_framework.config.training import (
    AlgoConfig,
    CurriculumConfig,
    EpisodeRewardConfig,
    OptimConfig,
    RolloutConfig,
    TrainingConfig,
)
from coding_framework.embedded.architecture import init_model
from coding_framework.grading import Grader
from coding_framework.llm.base import Generation, SamplingParams
from coding_framework.llm.local import LocalEngine
from coding_framework.problems import FAMILIES, Problem, synthetic_split
from coding_framework.rewards import CompositeReward
from coding_framework.testing.chat import fenced
from coding_framework.testing.engine import ScriptedEngine, tiny_tokenizer
from coding_framework.testing.models import TINY
from coding_framework.training.algos.algorithms import ALGORITHMS, get_algorithm
from coding_framework.training.algos.kl import KLConfig
from coding_framework.training.algos.schedule import (
    ProblemSampler,
    difficulty_weights,
    lr_factor,
    temperature_at,
)
from coding_framework.training.batch import TrajectoryBatch, score
from coding_framework.training.rollouts.episodes import collect, step_workflow
from coding_framework.training.rollouts.scoring import (
    RunningMoments,
    episode_rewards,
    shape_rewards,
    to_trajectories,
)
from coding_framework.training.run.setup import split_problems
from coding_framework.training.trajectory import CallSpan, Trajectory
from coding_framework.training.update import PolicyUpdate
from tests.training._episodes import ADD

CORRECTNESS_ONLY = RewardConfig(weights={"correctness": 1.0, "style": 0.0, "efficiency": 0.0})


@pytest.fixture(scope="module")
def grader():
    with Grader() as g:
        yield g


def _workflow(max_rounds: int = 2) -> WorkflowConfig:
    wf = step_workflow(WorkflowConfig(), max_new_tokens=24, temperature=1.0, top_p=1.0, max_rounds=max_rounds)
    return wf.model_copy(update={"graph": wf.graph.model_copy(update={"review": "never"})})


def _tiny_engine(seed: int = 0) -> LocalEngine:
    return LocalEngine(init_model(TINY, tiny_tokenizer(), seed), tiny_tokenizer(), device="cpu")


# -- rollouts ----------------------------------------------------------------------------------------------


def test_rollout_groups_rounds_and_rewards(grader: Grader) -> None:
    """Every episode drafts wrong code, gets the Executor's feedback, then revises to a pass."""
    wrong, right = fenced("def add(a, b):\n    return a - b"), fenced("def add(a, b):\n    return a + b")
    engine = ScriptedEngine(respond=lambda prompt: right if "is wrong" in prompt else wrong)
    reward = CompositeReward(CORRECTNESS_ONLY, grader=grader)
    batch = asyncio.run(collect(engine, _workflow(), grader, [ADD, ADD], 3, seed=7, reward_fn=reward))
    assert [e.group for e in batch.episodes] == [0, 0, 0, 1, 1, 1]
    assert all(e.passed and e.rounds == 2 and e.reward.value == 1.0 for e in batch.episodes)
    assert batch.waves == 2  # both rounds of all six episodes were decoded as one wave each
    rows = to_trajectories(batch.episodes, [1.0] * 6, ["generator"], step=4)
    assert [r.group_id for r in rows] == ["4/0"] * 3 + ["4/1"] * 3
    assert all(r.num_turns == 2 and 0 in r.response_mask for r in rows)  # feedback tokens are mask 0


def test_rollout_is_reproducible_from_its_seed(grader: Grader) -> None:
    problems = synthetic_split(4, 0.25, 0)[0][:2]
    reward = CompositeReward(CORRECTNESS_ONLY, grader=grader)

    def sampled(seed: int) -> list[list[int]]:
        batch = asyncio.run(collect(_tiny_engine(), _workflow(1), grader, problems, 3, seed, reward))
        return [c["response_ids"] for e in batch.episodes for c in e.state["calls"]]

    first = sampled(11)
    assert sampled(11) == first
    assert sampled(12) != first
    assert len({tuple(ids) for ids in first}) > 1  # episodes of one group draw different samples


# -- reward shaping ----------------------------------------------------------------------------------------


def test_round_penalty_prefers_first_draft_passes(grader: Grader) -> None:
    wrong, right = fenced("def add(a, b):\n    return a - b"), fenced("def add(a, b):\n    return a + b")
    answers = iter([right, wrong, right])  # episode 0 passes at once; episode 1 after one revision
    engine = ScriptedEngine(respond=lambda prompt: next(answers))
    batch = asyncio.run(
        collect(engine, _workflow(), grader, [ADD], 2, 0, CompositeReward(CORRECTNESS_ONLY, grader))
    )
    assert [e.rounds for e in batch.episodes] == [1, 2]
    assert episode_rewards(batch.episodes, EpisodeRewardConfig(round_penalty=0.25)) == [1.0, 0.75]


def test_shape_rewards_normalises_and_clips() -> None:
    raw = [0.0, 1.0, 1.0, 0.0]
    batch = shape_rewards(raw, EpisodeRewardConfig(normalize="batch"), RunningMoments())
    assert batch == pytest.approx([-1.0, 1.0, 1.0, -1.0], abs=1e-4)
    assert shape_rewards([5.0, -5.0], EpisodeRewardConfig(clip=2.0), RunningMoments()) == [2.0, -2.0]
    moments = RunningMoments()
    shape_rewards([1.0, 3.0], EpisodeRewardConfig(normalize="running"), moments)
    later = shape_rewards([5.0], EpisodeRewardConfig(normalize="running"), moments)
    assert moments.mean == pytest.approx(3.0) and moments.std == pytest.approx(math.sqrt(8 / 3))
    assert later == pytest.approx([2.0 / math.sqrt(8 / 3)], rel=1e-4)


# -- the update --------------------------------------------------------------------------------------------


def _sampled_rows(
    model: torch.nn.Module, n: int, tokens: int, seed: int
) -> list[tuple[list[int], Generation]]:
    """(prompt, response) pairs sampled from ``model`` for a fixed prompt."""
    engine = LocalEngine(model, tiny_tokenizer(), device="cpu")
    prompt = tiny_tokenizer()("def add(a, b):", add_special_tokens=False)["input_ids"]
    params = SamplingParams(max_new_tokens=tokens, temperature=1.0, seed=seed)
    gens = engine.generate_batch([prompt] * n, params)
    return [(prompt, g) for g in gens]


def _trajectory(prompt: list[int], gen: Generation, reward: float, group: str) -> Trajectory:
    n = len(gen.token_ids)
    return Trajectory(
        prompt_ids=prompt,
        response_ids=gen.token_ids,
        response_mask=[1] * n,
        response_logprobs=gen.logprobs,
        reward=reward,
        group_id=group,
        calls=[
            CallSpan(
                turn=0,
                start=0,
                length=n,
                text=gen.text,
                stop_reason=gen.stop_reason,
                policy_version=gen.policy_version,
            )
        ],
    )


def _updater(
    model: torch.nn.Module,
    algorithm: str = "grpo",
    lr: float = 3e-3,
    micro: int = 16,
    kl: KLConfig | None = None,
) -> PolicyUpdate:
    optim = OptimConfig(lr=lr, micro_batch_size=micro)
    return PolicyUpdate(
        model, get_algorithm(algorithm), AlgoConfig(), optim, kl or KLConfig(), 100, seed=0
    )


def test_shared_prompt_scoring_equals_a_full_forward_of_each_row() -> None:
    """Logprobs and gradients of the prompt-sharing forward equal one forward per whole sequence."""
    model = init_model(TINY, tiny_tokenizer(), 0)
    tok = tiny_tokenizer()
    rows = []
    for g, text in enumerate(["def add(a, b):", "for i in range(10):"]):
        prompt = tok(text, add_special_tokens=False)["input_ids"]
        for i, (_, gen) in enumerate(_sampled_rows(model, 3, 6 + 3 * g, seed=g)):
            n = len(gen.token_ids)
            spans = [(0, n)] if i != 1 else [(0, 2), (4, n - 4)]  # row 1: two turns around 2 context tokens
            mask = [0] * n
            for start, length in spans:
                mask[start : start + length] = [1] * length
            lps = [lp if m else 0.0 for lp, m in zip(gen.logprobs, mask, strict=True)]
            spans = [
                CallSpan(turn=k, start=a, length=b, text="", stop_reason="eos", policy_version="0")
                for k, (a, b) in enumerate(spans)
            ]
            rows.append(
                Trajectory(
                    prompt_ids=prompt,
                    response_ids=gen.token_ids,
                    response_mask=mask,
                    response_logprobs=lps,
                    group_id=str(g),
                    calls=spans,
                )
            )
    batch = TrajectoryBatch.from_trajectories(
        rows[::-1], tok.pad_token_id
    )  # groups interleave with the order
    assert len(batch.prompts) == 2
    shared = score(model, batch).logprobs
    (shared.sum()).backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    full_total = 0.0
    for i, t in enumerate(rows[::-1]):
        x = torch.tensor([t.ids])
        logp = torch.log_softmax(model(input_ids=x).logits[0, len(t.prompt_ids) - 1 : -1].float(), -1)
        picked = logp.gather(-1, x[0, len(t.prompt_ids) :].unsqueeze(-1)).squeeze(-1) * torch.tensor(
            t.response_mask
        )
        assert torch.allclose(shared[i, : len(picked)], picked, atol=1e-5)
        full_total = full_total + picked.sum()
    full_total.backward()
    for a, p in zip(grads, model.parameters(), strict=True):
        assert torch.allclose(a, p.grad, atol=1e-5)


def test_update_raises_logprobs_of_rewarded_samples_on_a_fixed_batch() -> None:
    model = init_model(TINY, tiny_tokenizer(), 0)
    sampled = _sampled_rows(model, 8, 6, seed=3)
    rows = [_trajectory(p, g, float(i % 2), "g") for i, (p, g) in enumerate(sampled)]
    batch = TrajectoryBatch.from_trajectories(rows, tiny_tokenizer().pad_token_id)
    good, bad = batch.rewards == 1, batch.rewards == 0

    def mean_logprob(which: torch.Tensor) -> float:
        with torch.no_grad():
            lp = score(model, batch).logprobs
        return float((lp[which] * batch.response_mask[which]).sum() / batch.response_mask[which].sum())

    before_good, before_bad = mean_logprob(good), mean_logprob(bad)
    updater = _updater(model)
    losses = [updater.step(batch, step)["losses/pg_loss"] for step in range(4)]
    assert mean_logprob(good) > before_good + 0.05
    assert mean_logprob(bad) < before_bad - 0.05
    assert losses[-1] < losses[0]


def test_adam_epsilon_sets_whether_steps_follow_the_gradient_or_its_sign() -> None:
    """First AdamW step: ``lr * g / (|g| + eps)``. At eps 1e-8 every weight with a gradient moves a full
    ``lr``; with eps far above the gradients, steps follow the gradient (weak, noisy ones move less)."""
    sampled = _sampled_rows(init_model(TINY, tiny_tokenizer(), 0), 8, 5, seed=2)
    rows = [_trajectory(p, g, float(i % 2), "g") for i, (p, g) in enumerate(sampled)]
    batch = TrajectoryBatch.from_trajectories(rows, tiny_tokenizer().pad_token_id)
    lr = 1e-3
    for eps in (1e-8, 1.0):
        model = init_model(TINY, tiny_tokenizer(), 0)
        before = torch.cat([p.detach().flatten() for p in model.parameters()])
        optim = OptimConfig(lr=lr, eps=eps, grad_clip=None)
        PolicyUpdate(model, get_algorithm("grpo"), AlgoConfig(), optim, KLConfig(), 10, seed=0).step(
            batch, 0
        )
        delta = torch.cat([p.detach().flatten() for p in model.parameters()]) - before
        grad = torch.cat([p.grad.flatten() for p in model.parameters()])
        assert torch.allclose(delta, -lr * grad / (grad.abs() + eps), atol=1e-7)
        strong = grad.abs() > 1e-5
        if eps == 1e-8:
            full = torch.full_like(delta[strong], lr)
            assert strong.any() and torch.allclose(delta[strong].abs(), full, rtol=1e-2)
        else:
            assert delta.abs().max() < lr * grad.abs().max() * 1.01


def test_gradient_accumulation_equals_one_large_batch() -> None:
    """Micro-batches of 3 accumulate exactly the gradient of one batch of 8."""
    base = init_model(TINY, tiny_tokenizer(), 0)
    sampled = _sampled_rows(base, 8, 5, 1)
    rows = [_trajectory(p, g, float(i % 3 == 0), f"g{i % 2}") for i, (p, g) in enumerate(sampled)]
    batch = TrajectoryBatch.from_trajectories(rows, tiny_tokenizer().pad_token_id)
    after = []
    for micro in (8, 3):
        model = init_model(TINY, tiny_tokenizer(), 0)
        _updater(model, "dapo", micro=micro).step(batch, 0)  # dapo: token-mean aggregation
        after.append(
            torch.cat([p.grad.flatten() for p in model.parameters()])
        )  # the step's (clipped) gradient
    assert after[0].abs().max() > 1e-3
    assert torch.allclose(after[0], after[1], atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_update_learns_a_trivially_learnable_reward(algorithm: str) -> None:
    """Reward 1 when the first sampled token has an even id: every algorithm must push the rate up."""
    torch.manual_seed(0)
    model = init_model(TINY, tiny_tokenizer(), 0)
    kl = KLConfig(mode="loss", coef=0.001) if algorithm == "grpo" else KLConfig()
    updater = _updater(model, algorithm, lr=1e-2, kl=kl)

    def rate(step: int, learn: bool) -> float:
        rows, hits = [], 0
        for k in range(4):  # 4 groups of 8
            for prompt, gen in _sampled_rows(model, 8, 1, seed=1000 * step + k):
                hit = float(gen.token_ids[0] % 2 == 0)
                hits += hit
                rows.append(_trajectory(prompt, gen, hit, f"{step}/{k}"))
        if learn:
            updater.step(TrajectoryBatch.from_trajectories(rows, tiny_tokenizer().pad_token_id), step)
        return hits / len(rows)

    before = sum(rate(-1 - i, learn=False) for i in range(2)) / 2
    for step in range(16):
        rate(step, learn=True)
    after = sum(rate(100 + i, learn=False) for i in range(2)) / 2
    assert after > before + 0.25, (before, after)


# -- schedules ---------------------------------------------------------------------------------------------


def test_lr_schedule_warms_up_then_decays() -> None:
    cfg = OptimConfig(warmup_steps=4, schedule="cosine", min_lr_ratio=0.1)
    factors = [lr_factor(s, 20, cfg) for s in range(21)]
    assert factors[:4] == [0.25, 0.5, 0.75, 1.0]
    assert factors[4] == pytest.approx(1.0) and factors[20] == pytest.approx(0.1)
    assert all(a >= b for a, b in itertools.pairwise(factors[4:]))
    assert lr_factor(10, 20, OptimConfig(schedule="linear", min_lr_ratio=0.0)) == pytest.approx(0.5)


def test_temperature_and_curriculum_follow_the_step() -> None:
    rollout = RolloutConfig(temperature=1.2, temperature_end=0.6)
    assert [temperature_at(s, 4, rollout) for s in (0, 3)] == pytest.approx([1.2, 0.6])
    cur = CurriculumConfig(
        enabled=True,
        start={"easy": 1, "medium": 0, "hard": 0},
        end={"easy": 1, "medium": 1, "hard": 1},
        ramp_steps=4,
    )
    assert difficulty_weights(0, cur)["hard"] == 0 and difficulty_weights(2, cur)["hard"] == 0.5
    train, _ = synthetic_split(8, 0.25, 0)
    early = ProblemSampler(train, 0, cur).draw(0, 10)
    assert {p.difficulty for p in early} == {"easy"}


def test_reserved_training_constants_are_neither_sft_nor_heldout_constants() -> None:
    def consts(problems: list[Problem]) -> set[tuple[str, str]]:
        return {(p.tags[0], p.tags[-1]) for p in problems}

    data = {"synthetic_per_family": 12, "train_constants": "reserved", "train_instance_seed": 1}
    train, heldout = split_problems(TrainingConfig.model_validate({"data": data}))
    sft_train, _ = synthetic_split(200, 0.25, 0)
    assert len(train) == 9 * len(FAMILIES) and len(heldout) == 3 * len(FAMILIES)
    assert not consts(train) & consts(heldout)
    assert not (consts(train) | consts(heldout)) & consts(sft_train)


def test_an_unknown_family_lists_the_valid_ones() -> None:
    config = TrainingConfig.model_validate({"data": {"synthetic_per_family": 4, "families": ["nope"]}})
    with pytest.raises(ConfigError, match=r"unknown families \['nope'\]; valid families: \['add_constant'"):
        split_problems(config)


def test_sampler_is_a_pure_function_of_seed_and_cursor() -> None:
    train, _ = synthetic_split(4, 0.25, 0)
    a = ProblemSampler(train, 3, CurriculumConfig())
    drawn = [p.task_id for step in range(10) for p in a.draw(step, 7)]
    b = ProblemSampler(train, 3, CurriculumConfig())
    b.cursor = 14
    assert [p.task_id for p in b.draw(2, 7)] == drawn[14:21]
    assert sorted(drawn[: len(train)]) == sorted(p.task_id for p in train)  # one epoch: each problem once
