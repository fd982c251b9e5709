from __future__ import annotations

import numpy as np
import pytest
import torch
from verl.experimental.agent_loop.agent_loop import AgentLoopOutput
from verl.protocol import DataProto
from verl.utils.model import compute_position_id_with_mask

from coding_framework.testing.engine import ScriptedEngine
from coding_framework.training.trajectory import Trajectory
from coding_framework.training.verl.interop import (
    from_agent_loop_output,
    from_data_proto,
    to_agent_loop_output,
    to_data_proto,
)
from tests.training._episodes import RIGHT, WRONG, two_turn_session

PAD = 0


def _batch() -> list[Trajectory]:
    """Rows of different prompt and response lengths, two groups, rewards that float32 would round."""
    long_feedback = "tests failed: " + "assert add(1, 2) == 3 " * 6
    rows = [
        Trajectory.from_session(two_turn_session(), reward=1.0, task_id="t/add", group_id="g0"),
        Trajectory.from_session(two_turn_session(feedback=long_feedback), reward=0.1, task_id="t/add",
                                group_id="g0", metadata={"passed": False}),
        Trajectory.from_session(two_turn_session(ScriptedEngine([RIGHT, WRONG + "\n# more"])), reward=-1 / 3,
                                task_id="t/other", group_id="g1"),
    ]
    assert len({len(t.response_ids) for t in rows}) == 3
    return rows


def test_agent_loop_output_round_trip() -> None:
    for traj in _batch():
        out = to_agent_loop_output(traj)
        assert isinstance(out, AgentLoopOutput)
        assert out.prompt_ids == traj.prompt_ids and out.response_ids == traj.response_ids
        assert out.response_mask == traj.response_mask and out.response_logprobs == traj.response_logprobs
        assert out.reward_score == traj.reward and out.num_turns == 4
        assert from_agent_loop_output(out) == traj
        # verl's own tensor view: the reward lands on the last response token, a generated one
        as_dict = out.as_dict()
        assert as_dict["rm_scores"][-1] == pytest.approx(traj.reward) and as_dict["response_mask"][-1] == 1


def test_data_proto_layout_matches_verl() -> None:
    trajs = _batch()
    data = to_data_proto(trajs, pad_token_id=PAD)
    assert isinstance(data, DataProto)
    b, nt = data.batch, data.non_tensor_batch
    p = max(len(t.prompt_ids) for t in trajs)
    r = max(len(t.response_ids) for t in trajs)
    assert b["prompts"].shape == (3, p) and b["responses"].shape == (3, r)
    assert b["input_ids"].shape == b["attention_mask"].shape == b["position_ids"].shape == (3, p + r)
    assert torch.equal(b["input_ids"], torch.cat([b["prompts"], b["responses"]], dim=1))
    assert torch.equal(b["position_ids"], compute_position_id_with_mask(b["attention_mask"]))
    for i, t in enumerate(trajs):
        lp, lr = len(t.prompt_ids), len(t.response_ids)
        assert b["attention_mask"][i].tolist() == [0] * (p - lp) + [1] * (lp + lr) + [0] * (r - lr)
        assert b["prompts"][i, : p - lp].eq(PAD).all()  # left padded
        assert b["responses"][i, lr:].eq(PAD).all()  # right padded
        assert b["response_mask"][i, lr:].eq(0).all()
        # the reward sits at the last generated token and nowhere else
        scores = b["token_level_scores"][i]
        assert scores.nonzero().flatten().tolist() == [lr - 1] and b["response_mask"][i, lr - 1] == 1
        assert scores[lr - 1].item() == pytest.approx(t.reward)
        assert torch.equal(b["rm_scores"][i], scores)
        assert b["position_ids"][i, p].item() == lp  # positions continue from the prompt into the response
    assert b["rollout_log_probs"].dtype == torch.float32
    assert list(nt["uid"]) == ["g0", "g0", "g1"] and list(nt["task_id"]) == ["t/add", "t/add", "t/other"]
    assert nt["__num_turns__"].tolist() == [4, 4, 4]


def test_data_proto_round_trip_is_lossless() -> None:
    trajs = _batch()
    back = from_data_proto(to_data_proto(trajs, pad_token_id=PAD, max_prompt_len=300, max_response_len=400))
    assert back == trajs  # ids, masks, logprobs, exact rewards, groups, calls, metadata
    assert back[2].reward == -1 / 3


def test_round_trip_survives_verl_batch_ops() -> None:
    """What verl's trainer does to a batch (concat, reorder, select) keeps rows intact."""
    trajs = _batch()
    halves = [to_data_proto(trajs[:2], PAD, 100, 256), to_data_proto(trajs[2:], PAD, 100, 256)]
    data = DataProto.concat(halves)
    data.reorder(torch.tensor([2, 0, 1]))
    assert from_data_proto(data) == [trajs[2], trajs[0], trajs[1]]
    assert from_data_proto(data.select_idxs(np.array([False, True, False]))) == [trajs[0]]


def test_limits_and_foreign_batches_are_refused() -> None:
    trajs = _batch()
    with pytest.raises(ValueError, match="max_response_len"):
        to_data_proto(trajs, PAD, max_response_len=5)
    with pytest.raises(ValueError, match="no trajectories"):
        to_data_proto([], PAD)
    data = to_data_proto(trajs, PAD)
    data.non_tensor_batch.pop("calls")
    with pytest.raises(ValueError, match="lacks"):
        from_data_proto(data)
