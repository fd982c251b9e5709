"""The preflight's pieces without Ray: a token server answering verl's replica call, the mask checks, the
episode-time union, and the settings problems found in verl's composed config."""

from __future__ import annotations

import importlib.util

import pytest
from verl.workers.rollout.replica import TokenOutput

from coding_framework.llm.base import EngineError
from coding_framework.testing.engine import ScriptedEngine
from coding_framework.training.algos.algorithms import get_algorithm
from coding_framework.training.trajectory import Trajectory
from coding_framework.training.verl.audit import episode_seconds, mask_summary
from coding_framework.training.verl.interop import to_data_proto
from coding_framework.training.verl.token_server import INITIAL_STEP, TokenServer, sampling_from_verl
from tests.training._episodes import RIGHT, two_turn_session

VERL = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0, "logprobs": True,
        "max_tokens": 64}


def _server(engine: ScriptedEngine) -> TokenServer:
    server = TokenServer.__new__(TokenServer)  # skip loading a model: the engine is the scripted one
    server.engine, server.calls, server.generated_tokens = engine, 0, 0
    server.global_steps = INITIAL_STEP
    return server


async def test_a_token_server_answers_verls_replica_call() -> None:
    engine = ScriptedEngine(respond=lambda _: RIGHT)
    server = _server(engine)
    # the keywords LLMServerClient.generate passes (verl 0.9.1)
    out = await server.generate(request_id="r1", prompt_ids=[1, 5, 6], sampling_params=dict(VERL),
                                image_data=None, video_data=None)
    assert isinstance(out, TokenOutput) and out.stop_reason == "completed"
    assert out.token_ids == engine.generate([1, 5, 6], sampling_from_verl(VERL)).token_ids
    assert out.log_probs is not None and len(out.log_probs) == len(out.token_ids)
    assert out.extra_fields == {"global_steps": INITIAL_STEP}
    no_logprobs = await server.generate([1, 5, 6], {**VERL, "logprobs": False}, "r2")
    assert no_logprobs.log_probs is None and server.stats() == {"calls": 2, "generated_tokens": 2 * len(
        out.token_ids)}


@pytest.mark.parametrize(("change", "message"), [
    ({"top_k": 20}, "top_k=20"), ({"repetition_penalty": 1.1}, "repetition_penalty=1.1"),
    ({"max_tokens": None}, "max_tokens"),
])
def test_sampling_the_servers_cannot_honour_is_refused(change: dict, message: str) -> None:
    params = {k: v for k, v in {**VERL, **change}.items() if v is not None}
    with pytest.raises(EngineError, match=message):
        sampling_from_verl(params)


def test_verl_sampling_maps_to_ours() -> None:
    ours = sampling_from_verl({**VERL, "temperature": 0.7, "top_p": 0.9, "stop": ["```\n"]})
    assert (ours.max_new_tokens, ours.temperature, ours.top_p, ours.stop) == (64, 0.7, 0.9, ("```\n",))


def _rows(spans: list[tuple[float, float]]) -> list[Trajectory]:
    return [Trajectory.from_session(two_turn_session(), reward=0.5, task_id="t/add", group_id="g",
                                    metadata={"episode_began": a, "episode_ended": b}) for a, b in spans]


def test_masks_match_the_calls_and_a_broken_mask_is_named() -> None:
    rows = _rows([(0, 1), (0, 1)])
    batch = to_data_proto(rows, pad_token_id=0, max_response_len=300)
    summary = mask_summary(batch)
    assert summary.consistent and summary.trained_tokens == sum(sum(t.response_mask) for t in rows)
    assert summary.response_tokens == sum(len(t.response_ids) for t in rows)
    batch.batch["response_mask"][1, -1] = 1  # on padding, and one more than the calls generated
    broken = mask_summary(batch)
    assert not broken.consistent and "padding" in broken.problems[0] and "row 1" in broken.problems[1]


def test_episode_time_is_the_union_of_the_episode_spans() -> None:
    batch = to_data_proto(_rows([(10, 14), (11, 12), (13, 15), (20, 21)]), pad_token_id=0)
    assert episode_seconds(batch) == pytest.approx(6.0)


@pytest.mark.slow  # composes verl's config with hydra
def test_settings_problems_name_the_fix(tmp_path) -> None:
    from coding_framework.training.verl.preflight_checks import (
        base_overrides,
        compose_verl_config,
        settings_problems,
    )

    spec = get_algorithm("ppo")
    base = base_overrides(model_dir=tmp_path, loop_config=tmp_path / "loops.yaml", spec=spec, problems=2, n=2,
                          workers=2, prompt_length=512, response_length=1536)
    assert settings_problems(compose_verl_config(base), get_algorithm("grpo"), 2048) == []
    bad = compose_verl_config([*base, "trainer.use_v1=true", "actor_rollout_ref.rollout.temperature=0.7",
                               "actor_rollout_ref.rollout.calculate_log_probs=false"])
    found = " | ".join(settings_problems(bad, spec, 1024))
    for needle in ("temperature=0.7", "calculate_log_probs=false", "exceeds the model's 1024 positions",
                   "zero values"):
        assert needle in found
    # use_v1 is a problem only where TransferQueue (the `verl-v1` extra) is missing
    assert ("set trainer.use_v1=false" in found) is (importlib.util.find_spec("transfer_queue") is None)


@pytest.mark.slow  # imports verl's ray_trainer
def test_advantages_run_verls_estimator_on_the_trainers_batch() -> None:
    import numpy as np
    import torch
    from omegaconf import OmegaConf
    from verl.protocol import DataProto

    from coding_framework.training.verl.preflight import advantages

    rows = [Trajectory.from_session(two_turn_session(), reward=r, task_id="t/add", group_id=g)
            for r, g in [(1.0, "a"), (0.0, "a"), (0.5, "b"), (0.5, "b")]]
    output = to_data_proto(rows, pad_token_id=0)  # what the manager returns, one row per sample
    # the dataloader's batch: one row per problem, as RLHFDataset's collate_fn makes it
    batch = DataProto.from_single_dict({"dummy_tensor": torch.zeros(2, 1, dtype=torch.uint8),
                                        "uid": np.array(["a", "b"], dtype=object)})
    config = OmegaConf.create({"algorithm": {"adv_estimator": "grpo", "gamma": 1.0, "lam": 1.0,
                                             "norm_adv_by_std_in_grpo": True},
                               "actor_rollout_ref": {"rollout": {"n": 2}}})
    full = advantages(config, batch, output, get_algorithm("grpo"))
    mask = full.batch["response_mask"].bool()  # (B, R)
    std = float(torch.tensor([1.0, 0.0]).std())  # verl: unbiased std of the group, plus 1e-6
    for i, expected in enumerate([0.5 / (std + 1e-6), -0.5 / (std + 1e-6), 0.0, 0.0]):
        assert full.batch["advantages"][i][mask[i]].tolist() == pytest.approx([expected] * int(mask[i].sum()))
    assert torch.equal(full.batch["token_level_rewards"], output.batch["rm_scores"])
