"""Token-exact RL trajectories, cut from an episode's TokenSession without re-tokenizing anything.

A trajectory is verl's agent-loop layout: ``prompt_ids`` (the first rendered prompt, up to and including
the first generation prompt) and ``response_ids`` (everything after it, up to the last token the trained
role generated). For a multi-turn episode the response interleaves generated tokens (mask 1, with the
logprob recorded when they were sampled) and the tokens the policy only read (mask 0, logprob 0.0): the
template around each turn and the Executor's / Reviewer's feedback::

    prompt_ids:    |<- system + task + assistant header ->|
    response_ids:  |<- draft 1 ->|<- im_end, feedback, header ->|<- draft 2 ->|
    response_mask: | 1, 1, ..., 1 | 0, 0, ...................., 0 | 1, ..., 1    |

The ids are the session's ids verbatim: every call record is checked against them (its prompt is the
session so far, its generated ids sit at its offset), so a trajectory cannot silently drift from what
the policy actually saw.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from coding_framework.llm.session import CallRecord, TokenSession

DEFAULT_TRAINED_ROLES: tuple[str, ...] = ("generator",)


class CallSpan(BaseModel):
    """One generation of the trained role: ``response_ids[start : start + length]`` decode to ``text``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    turn: int
    start: int = Field(ge=0, description="Offset of the generated ids in `response_ids`.")
    length: int = Field(ge=0)
    text: str
    stop_reason: str
    policy_version: str

    @property
    def end(self) -> int:
        return self.start + self.length


class Trajectory(BaseModel):
    """One training row: a role's token sequence in one episode, its per-token mask and logprobs, its reward.

    ``response_mask[t] == 1`` exactly on the ids of ``calls`` (what the trained policy generated);
    ``response_logprobs`` holds the sampling-time logprob there and 0.0 elsewhere. Logprobs are float32
    quantities (engines compute them in float32 and verl stores them so), and are kept at float32
    precision, so converting to verl's tensors and back is exact.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt_ids: list[int] = Field(min_length=1)
    response_ids: list[int]
    response_mask: list[int]
    response_logprobs: list[float]
    reward: float = 0.0
    role: str = "generator"
    task_id: str = ""
    group_id: str = Field("", description="Rows sharing a group id are compared to each other (GRPO, RLOO).")
    calls: list[CallSpan] = Field(min_length=1, description="The trained role's generations, in order.")
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("response_logprobs")
    @classmethod
    def _float32(cls, logprobs: list[float]) -> list[float]:
        return np.asarray(logprobs, dtype=np.float32).tolist()

    @model_validator(mode="after")
    def _aligned(self) -> Trajectory:
        n = len(self.response_ids)
        if not len(self.response_mask) == len(self.response_logprobs) == n:
            raise ValueError(f"{n} response ids, {len(self.response_mask)} mask values and "
                             f"{len(self.response_logprobs)} logprobs: they must align one-to-one")
        expected = [0] * n
        for call in self.calls:
            if call.end > n:
                raise ValueError(f"call of turn {call.turn} ends at {call.end}, past the {n} response ids")
            expected[call.start : call.end] = [1] * call.length
        if self.response_mask != expected:
            raise ValueError("response_mask must be 1 exactly on the ids of `calls`")
        if any(lp != 0.0 for lp, m in zip(self.response_logprobs, self.response_mask, strict=True) if not m):
            raise ValueError("response_logprobs must be 0.0 where response_mask is 0")
        return self

    @property
    def num_turns(self) -> int:
        """Generations of the trained role in this trajectory."""
        return len(self.calls)

    @property
    def policy_versions(self) -> list[str]:
        return [c.policy_version for c in self.calls]

    @property
    def stop_reasons(self) -> list[str]:
        return [c.stop_reason for c in self.calls]

    @property
    def ids(self) -> list[int]:
        """``prompt_ids + response_ids``: the whole sequence the policy is scored on."""
        return [*self.prompt_ids, *self.response_ids]

    @property
    def num_generated(self) -> int:
        return sum(self.response_mask)

    @classmethod
    def from_session(cls, session: TokenSession, *, reward: float = 0.0, role: str = "generator",
                     task_id: str = "", group_id: str | None = None,
                     metadata: Mapping[str, Any] | None = None) -> Trajectory:
        """The trajectory of ``role``'s calls in a live session; other roles' calls become mask-0 context."""
        return from_records(session.ids, session.loss_mask, session.logprobs, session.calls, role=role,
                            reward=reward, task_id=task_id, group_id=group_id, metadata=metadata)


def _check_record(call: CallRecord, ids: Sequence[int], mask: Sequence[int],
                  logprobs: Sequence[float]) -> None:
    end = call.start + len(call.response_ids)
    problems = []
    if list(ids[: call.start]) != list(call.prompt_ids):
        problems.append("its prompt ids are not the session's ids before it")
    if list(ids[call.start : end]) != list(call.response_ids):
        problems.append("its generated ids are not at its offset in the session")
    elif any(m != 1 for m in mask[call.start : end]) or list(logprobs[call.start : end]) != call.logprobs:
        problems.append("the session's mask/logprobs at its offset are not its own")
    if problems:
        raise ValueError(f"call record of turn {call.turn} ({call.role}) does not match the session: "
                         f"{'; '.join(problems)} (was the history re-tokenized?)")


def from_records(ids: Sequence[int], loss_mask: Sequence[int], logprobs: Sequence[float],
                 calls: Sequence[CallRecord], *, role: str = "generator", reward: float = 0.0,
                 task_id: str = "", group_id: str | None = None,
                 metadata: Mapping[str, Any] | None = None) -> Trajectory:
    """Cut ``role``'s trajectory out of a session's ``ids``/``loss_mask``/``logprobs`` and its call records.

    The prompt is everything before the first call (of any role); the response runs to the end of
    ``role``'s last call. Only ``role``'s generated ids get mask 1.
    """
    if not len(ids) == len(loss_mask) == len(logprobs):
        raise ValueError(f"{len(ids)} ids, {len(loss_mask)} mask values, {len(logprobs)} logprobs: "
                         "not a session")
    if not calls:
        raise ValueError("the session has no generations: nothing to train on")
    for call in calls:
        _check_record(call, ids, loss_mask, logprobs)
    trained = [c for c in calls if c.role == role]
    if not trained:
        present = sorted({c.role for c in calls})
        raise ValueError(f"the session has no {role!r} calls (roles present: {present})")
    p = calls[0].start
    end = max(c.start + len(c.response_ids) for c in trained)
    mask = [0] * (end - p)
    lps = [0.0] * (end - p)
    spans = []
    for c in trained:
        s = c.start - p
        mask[s : s + len(c.response_ids)] = [1] * len(c.response_ids)
        lps[s : s + len(c.response_ids)] = list(c.logprobs)
        spans.append(CallSpan(turn=c.turn, start=s, length=len(c.response_ids), text=c.text,
                              stop_reason=c.stop_reason, policy_version=c.policy_version))
    return Trajectory(prompt_ids=list(ids[:p]), response_ids=list(ids[p:end]), response_mask=mask,
                      response_logprobs=lps, reward=reward, role=role, task_id=task_id,
                      group_id=task_id if group_id is None else group_id, calls=spans,
                      metadata=dict(metadata or {}))


def episode_task_id(final_state: Mapping[str, Any]) -> str:
    """The id of what an episode worked on: its problem's ``task_id``, or its repository task's
    ``instance_id`` (the repository graph's state holds ``task``)."""
    if final_state.get("problem"):
        return str(final_state["problem"].get("task_id", ""))
    return str((final_state.get("task") or {}).get("instance_id", ""))


def trajectories_from_episode(final_state: Mapping[str, Any],
                              trained_roles: Sequence[str] = DEFAULT_TRAINED_ROLES, *, reward: float = 0.0,
                              group_id: str | None = None,
                              metadata: Mapping[str, Any] | None = None) -> list[Trajectory]:
    """One trajectory per trained role with calls in a finished training-graph episode (or a repository
    graph's training episode, whose tool observations are the mask-0 tokens between the calls).

    Reads the state's ``trajectory`` (the Generator's session: ``ids``, ``loss_mask``, ``logprobs``) and
    ``calls`` (its call records). Roles whose calls are not in the session (a Reviewer answering
    through its own chat model, even on shared weights) emit no rows. ``group_id`` defaults to the
    problem's task id (``episode_task_id``), so episodes of one problem in a batch form one GRPO group.
    """
    session = final_state.get("trajectory")
    if not session or not final_state.get("calls"):
        raise ValueError("the state has no `trajectory`/`calls`: run the episode with build_training_graph")
    calls = [CallRecord(**record) for record in final_state["calls"]]
    task_id = episode_task_id(final_state)
    info = {"passed": bool(final_state.get("passed", False)),
            "episode_stop_reason": final_state.get("stop_reason"),
            "rounds": int(final_state.get("round", len(calls))), **(metadata or {})}
    roles = {c.role for c in calls}
    return [
        from_records(session["ids"], session["loss_mask"], session["logprobs"], calls, role=role,
                     reward=reward, task_id=task_id, group_id=group_id, metadata=info)
        for role in trained_roles if role in roles
    ]


def review_trajectories(final_state: Mapping[str, Any], rewards: Mapping[int, float], *,
                        group_id: str | None = None,
                        metadata: Mapping[str, Any] | None = None) -> list[Trajectory]:
    """One trajectory per recorded review call in ``final_state["review_calls"]`` whose turn has a reward.

    A review is a single-turn conversation of its own, so its record alone is the row: the rendered
    request as ``prompt_ids``, the review as ``response_ids`` (mask 1). ``rewards`` maps the reviewed round's
    index (the record's ``turn``) to the review's credit; reviews without one (no grader verdict to credit
    them by) emit no row.
    """
    task_id = episode_task_id(final_state)
    rows = []
    for raw in final_state.get("review_calls", []):
        call = CallRecord(**raw)
        if call.turn not in rewards:
            continue
        ids = [*call.prompt_ids, *call.response_ids]
        mask = [0] * len(call.prompt_ids) + [1] * len(call.response_ids)
        logprobs = [0.0] * len(call.prompt_ids) + list(call.logprobs)
        info = {"reviewed_round": call.turn + 1, **(metadata or {})}
        rows.append(from_records(ids, mask, logprobs, [call], role=call.role, reward=rewards[call.turn],
                                 task_id=task_id, group_id=group_id, metadata=info))
    return rows
