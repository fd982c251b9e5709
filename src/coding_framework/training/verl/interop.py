"""Lossless conversion between our ``Trajectory`` and verl's own classes (verl 0.9).

* ``to_agent_loop_output``: one trajectory as the ``AgentLoopOutput`` a verl agent loop returns.
* ``to_data_proto`` / ``from_data_proto``: a batch as the ``DataProto`` verl's PPO trainer consumes, with
  the keys ``AgentLoopWorker._postprocess`` produces: left-padded ``prompts``, right-padded ``responses``,
  ``response_mask``, ``input_ids``, ``attention_mask``, ``position_ids``, ``rollout_log_probs`` and the
  reward as ``rm_scores`` / ``token_level_scores`` at the last response token (which is always the last
  generated token: a trajectory ends on its last generation). Non-tensor keys carry what tensors cannot:
  ``uid`` (the GRPO group), ``task_id``, ``role``, the exact float ``reward``, the per-call spans and
  ``metadata``. They are the same keys ``to_agent_loop_output`` puts in ``extra_fields``, which verl copies
  into ``non_tensor_batch``, so a batch verl assembled from our agent loop converts back too.

A row can be *loss-masked* (``mask_out``): its ``response_mask`` is all 0, so verl's loss leaves it out
(its aggregations skip fully masked sequences), for an episode that must not train (an infrastructure
failure, not the policy's doing). ``metadata[LOSS_MASKED]`` says so, and the conversions back rebuild the
mask from the calls, so the row still converts to the ``Trajectory`` that was generated (and is audited).

Logprobs travel as float32, as verl keeps them; the engines compute them in float32, so nothing is lost.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict
from verl.experimental.agent_loop.agent_loop import AgentLoopMetrics, AgentLoopOutput
from verl.protocol import DataProto
from verl.utils.model import compute_position_id_with_mask

from coding_framework.training.trajectory import CallSpan, Trajectory

__all__ = ["LOSS_MASKED", "from_agent_loop_output", "from_data_proto", "loss_masked", "mask_out",
           "to_agent_loop_output", "to_data_proto", "verl_num_turns"]

_EXTRA_KEYS = ("task_id", "group_id", "role", "reward", "calls", "metadata")
LOSS_MASKED = "loss_masked"
"""``metadata`` key of a row left out of the loss (``mask_out``)."""


def _extra(traj: Trajectory) -> dict[str, Any]:
    return {"task_id": traj.task_id, "group_id": traj.group_id, "role": traj.role, "reward": traj.reward,
            "calls": [c.model_dump() for c in traj.calls], "metadata": dict(traj.metadata)}


def verl_num_turns(traj: Trajectory) -> int:
    """verl counts chat turns (user and assistant messages): one prompt/feedback plus one answer per call."""
    return 2 * traj.num_turns


def to_agent_loop_output(traj: Trajectory, metrics: AgentLoopMetrics | None = None) -> AgentLoopOutput:
    """The ``AgentLoopOutput`` for one trajectory; ``reward_score`` is set, so verl skips its reward model."""
    return AgentLoopOutput(
        prompt_ids=list(traj.prompt_ids), response_ids=list(traj.response_ids),
        response_mask=list(traj.response_mask), response_logprobs=list(traj.response_logprobs),
        reward_score=traj.reward, num_turns=verl_num_turns(traj), metrics=metrics or AgentLoopMetrics(),
        extra_fields=_extra(traj),
    )


def mask_out(output: AgentLoopOutput) -> AgentLoopOutput:
    """``output`` left out of verl's loss: ``response_mask`` all 0, ``metadata[LOSS_MASKED]`` set."""
    output.response_mask = [0] * len(output.response_ids)
    output.extra_fields["metadata"] = {**output.extra_fields.get("metadata", {}), LOSS_MASKED: True}
    return output


def loss_masked(metadata: Mapping[str, Any]) -> bool:
    return bool(metadata.get(LOSS_MASKED, False))


def _generated_mask(length: int, calls: Sequence[Mapping[str, Any]]) -> list[int]:
    """1 on the ids of ``calls`` (``CallSpan`` dicts), 0 elsewhere: a loss-masked row's mask as generated."""
    mask = [0] * length
    for call in calls:
        start = int(call["start"])
        mask[start : start + int(call["length"])] = [1] * int(call["length"])
    return mask


def from_agent_loop_output(output: AgentLoopOutput) -> Trajectory:
    """Inverse of ``to_agent_loop_output`` (needs the ``extra_fields`` it wrote)."""
    extra = output.extra_fields
    missing = [k for k in _EXTRA_KEYS if k not in extra]
    if missing:
        raise ValueError(f"extra_fields lacks {missing}: the output was not made by to_agent_loop_output")
    if output.response_logprobs is None:
        raise ValueError("the output has no response_logprobs "
                         "(set actor_rollout_ref.rollout.calculate_log_probs=True)")
    mask = (_generated_mask(len(output.response_ids), extra["calls"]) if loss_masked(extra["metadata"])
            else list(output.response_mask))
    return Trajectory(
        prompt_ids=list(output.prompt_ids), response_ids=list(output.response_ids),
        response_mask=mask, response_logprobs=list(output.response_logprobs),
        reward=float(extra["reward"]), role=extra["role"], task_id=extra["task_id"],
        group_id=extra["group_id"], calls=[CallSpan(**c) for c in extra["calls"]],
        metadata=dict(extra["metadata"]),
    )


def _width(lengths: list[int], limit: int | None, what: str) -> int:
    longest = max(lengths)
    if limit is None:
        return longest
    if longest > limit:
        raise ValueError(f"a {what} has {longest} tokens, more than max_{what}_len={limit}; raise the "
                         "limit or drop over-long trajectories before batching")
    return limit


def _objects(values: Sequence[Any]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    return out


def to_data_proto(trajs: Sequence[Trajectory], pad_token_id: int, max_prompt_len: int | None = None,
                  max_response_len: int | None = None) -> DataProto:
    """A verl batch of ``trajs``. Widths are the longest prompt/response unless given.

    Tensors (B rows, P prompt and R response columns): ``prompts`` (B, P) left-padded, ``responses``
    (B, R) right-padded, ``response_mask`` (B, R), ``input_ids`` / ``attention_mask`` / ``position_ids``
    (B, P + R), ``rollout_log_probs`` (B, R) float32, ``rm_scores`` = ``token_level_scores`` (B, R)
    float32 holding the reward at each row's last response token.
    """
    if not trajs:
        raise ValueError("no trajectories to batch")
    n = len(trajs)
    p = _width([len(t.prompt_ids) for t in trajs], max_prompt_len, "prompt")
    r = _width([len(t.response_ids) for t in trajs], max_response_len, "response")
    prompts = torch.full((n, p), pad_token_id, dtype=torch.long)  # (B, P)
    responses = torch.full((n, r), pad_token_id, dtype=torch.long)  # (B, R)
    response_mask = torch.zeros((n, r), dtype=torch.long)  # (B, R)
    attention_mask = torch.zeros((n, p + r), dtype=torch.long)  # (B, P + R)
    logprobs = torch.zeros((n, r), dtype=torch.float32)  # (B, R)
    scores = torch.zeros((n, r), dtype=torch.float32)  # (B, R)
    for i, t in enumerate(trajs):
        lp, lr = len(t.prompt_ids), len(t.response_ids)
        prompts[i, p - lp :] = torch.tensor(t.prompt_ids)
        responses[i, :lr] = torch.tensor(t.response_ids)
        if not loss_masked(t.metadata):
            response_mask[i, :lr] = torch.tensor(t.response_mask)
        attention_mask[i, p - lp : p + lr] = 1
        logprobs[i, :lr] = torch.tensor(t.response_logprobs, dtype=torch.float32)
        scores[i, lr - 1] = t.reward
    batch = TensorDict(
        {
            "prompts": prompts, "responses": responses, "response_mask": response_mask,
            "input_ids": torch.cat([prompts, responses], dim=1),  # (B, P + R)
            "attention_mask": attention_mask,
            "position_ids": compute_position_id_with_mask(attention_mask),  # (B, P + R)
            "rollout_log_probs": logprobs, "rm_scores": scores, "token_level_scores": scores.clone(),
        },
        batch_size=n,
    )
    non_tensor = {
        "uid": _objects([t.group_id for t in trajs]),
        "__num_turns__": np.array([verl_num_turns(t) for t in trajs], dtype=np.int32),
        **{k: _objects([_extra(t)[k] for t in trajs]) for k in _EXTRA_KEYS},
    }
    return DataProto(batch=batch, non_tensor_batch=non_tensor, meta_info={"pad_token_id": pad_token_id})


def from_data_proto(data: DataProto) -> list[Trajectory]:
    """The trajectories in a batch made by ``to_data_proto`` or by verl from our agent loop's outputs."""
    nt = data.non_tensor_batch
    missing = [k for k in _EXTRA_KEYS if k not in nt]
    if missing:
        raise ValueError(f"non_tensor_batch lacks {missing}: not a batch of coding_framework trajectories")
    b = data.batch
    p = b["prompts"].shape[1]
    attn = b["attention_mask"].bool()  # (B, P + R)
    out = []
    for i in range(len(data)):
        lr = int(attn[i, p:].sum())
        calls, metadata = nt["calls"][i], dict(nt["metadata"][i])
        mask = (_generated_mask(lr, calls) if loss_masked(metadata)
                else b["response_mask"][i, :lr].tolist())
        out.append(Trajectory(
            prompt_ids=b["prompts"][i][attn[i, :p]].tolist(), response_ids=b["responses"][i, :lr].tolist(),
            response_mask=mask,
            response_logprobs=b["rollout_log_probs"][i, :lr].tolist(),
            reward=float(nt["reward"][i]), role=str(nt["role"][i]), task_id=str(nt["task_id"][i]),
            group_id=str(nt["group_id"][i]), calls=[CallSpan(**c) for c in calls], metadata=metadata,
        ))
    return out
