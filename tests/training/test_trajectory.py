from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from coding_framework.config.graph import WorkflowConfig
from coding_framework.graphs import build_training_graph
from coding_framework.llm.base import SamplingParams
from coding_framework.llm.session import TokenSession
from coding_framework.problems.prompts import generation_messages
from coding_framework.testing.engine import ScriptedEngine
from coding_framework.testing.grader import InProcessGrader
from coding_framework.training.trajectory import Trajectory, from_records, trajectories_from_episode
from tests.training._episodes import ADD, RIGHT, WRONG, two_turn_session


def f32(values: list[float]) -> list[float]:
    """Trajectories keep logprobs at float32 precision (the scripted engine's are float64)."""
    return np.asarray(values, dtype=np.float32).tolist()


def test_from_session_is_the_session_verbatim() -> None:
    session = two_turn_session()
    traj = Trajectory.from_session(session, reward=1.0, task_id="t/add")
    first, second = session.calls
    assert traj.prompt_ids == first.prompt_ids
    end = second.start + len(second.response_ids)
    assert traj.ids == session.ids[:end]
    assert traj.response_mask == session.loss_mask[len(traj.prompt_ids) : end]
    assert traj.response_logprobs == f32(session.logprobs[len(traj.prompt_ids) : end])
    assert traj.num_turns == 2 and traj.group_id == "t/add" and traj.reward == 1.0
    assert traj.stop_reasons == ["eos", "eos"] and traj.policy_versions == ["test-0", "test-0"]
    # the response ends on the last generated token, so verl's reward slot is a generated token
    assert traj.response_mask[-1] == 1
    # feedback and template tokens sit between the two drafts with mask 0
    gap = traj.response_mask[traj.calls[0].end : traj.calls[1].start]
    assert gap and set(gap) == {0}
    for call, record in zip(traj.calls, session.calls, strict=True):
        assert traj.response_ids[call.start : call.end] == record.response_ids
        assert traj.response_logprobs[call.start : call.end] == f32(record.logprobs)
        assert call.text == record.text


def test_other_roles_calls_become_context() -> None:
    engine = ScriptedEngine([WRONG, "The subtraction should be an addition.", RIGHT])
    session = TokenSession(engine.tokenizer)
    session.add_messages(generation_messages(ADD))
    session.generate(engine, SamplingParams(), role="generator")
    session.add_messages([{"role": "user", "content": "Review the code."}])
    session.generate(engine, SamplingParams(), role="reviewer")
    session.add_messages([{"role": "user", "content": "Fix it."}])
    session.generate(engine, SamplingParams(), role="generator")
    gen = Trajectory.from_session(session, role="generator")
    rev = Trajectory.from_session(session, role="reviewer")
    assert gen.num_turns == 2 and rev.num_turns == 1
    review = session.calls[1]
    at = review.start - len(gen.prompt_ids)
    assert gen.response_ids[at : at + len(review.response_ids)] == review.response_ids
    assert set(gen.response_mask[at : at + len(review.response_ids)]) == {0}
    assert set(gen.response_logprobs[at : at + len(review.response_ids)]) == {0.0}
    assert rev.num_generated == len(review.response_ids)
    assert len(rev.response_ids) < len(gen.response_ids)  # the reviewer's row stops at its own last call


def test_a_record_that_disagrees_with_the_session_is_refused() -> None:
    session = two_turn_session()
    calls = list(session.calls)
    tampered = list(calls[1].prompt_ids)
    tampered[-3] += 1  # what a re-tokenized history looks like to the record check
    calls[1] = dataclasses.replace(calls[1], prompt_ids=tampered)
    with pytest.raises(ValueError, match="re-tokenized"):
        from_records(session.ids, session.loss_mask, session.logprobs, calls)
    with pytest.raises(ValueError, match="no 'reviewer' calls"):
        from_records(session.ids, session.loss_mask, session.logprobs, session.calls, role="reviewer")


def test_validation_rejects_misaligned_rows() -> None:
    traj = Trajectory.from_session(two_turn_session())
    data = traj.model_dump()
    with pytest.raises(ValueError, match="align"):
        Trajectory.model_validate({**data, "response_mask": data["response_mask"][:-1]})
    with pytest.raises(ValueError, match="exactly on the ids"):
        Trajectory.model_validate({**data, "response_mask": [1] * len(data["response_mask"])})
    logprobs = list(data["response_logprobs"])
    logprobs[traj.calls[0].end] = -0.5  # a feedback token with a logprob
    with pytest.raises(ValueError, match=r"0\.0 where response_mask is 0"):
        Trajectory.model_validate({**data, "response_logprobs": logprobs})
    assert Trajectory.model_validate(data) == traj  # a dump round-trips


async def test_trajectories_from_a_training_episode() -> None:
    engine = ScriptedEngine([WRONG, RIGHT])
    graph = build_training_graph(WorkflowConfig(), grader=InProcessGrader(), engine=engine)
    state = await graph.ainvoke({"problem": ADD.model_dump()})
    (traj,) = trajectories_from_episode(state, reward=0.5)
    assert traj.task_id == traj.group_id == "t/add" and traj.role == "generator"
    assert traj.ids == state["trajectory"]["ids"][: len(traj.ids)]
    assert [c.text for c in traj.calls] == [r["answer"] for r in state["rounds"]]
    assert traj.metadata["passed"] is True and traj.metadata["rounds"] == 2
    expected = Trajectory.from_session(two_turn_session(feedback=state["rounds"][0]["feedback"]), reward=0.5,
                                       task_id="t/add", metadata=traj.metadata)
    assert traj == expected
    assert trajectories_from_episode(state, trained_roles=("reviewer",)) == []
    assert trajectories_from_episode(state, group_id="g7")[0].group_id == "g7"


def test_an_inference_episode_has_no_trajectory() -> None:
    with pytest.raises(ValueError, match="build_training_graph"):
        trajectories_from_episode({"problem": ADD.model_dump(), "passed": True})
