"""Checks on the ``DataProto`` verl's ``AgentLoopManager`` returns: masks, token exactness, episode time.

* ``mask_summary``: every row's ``response_mask`` lies inside its response (``attention_mask``), and its
  sum equals the tokens of the row's generation calls (``calls`` in ``non_tensor_batch``), or 0 for a row
  left out of the loss (``interop.mask_out``).
* ``drift``: the batch's trajectories through ``training.auditor.audit``, i.e. each generated token's
  recorded ``rollout_log_probs`` against the policy's teacher-forced logprob, and each call's decoded ids
  against the text the agent saw. ``drift_tokens`` counts generated tokens that fail either check. With
  role adapters the rows are teacher-forced through their role's adapter, the weights that sampled them.
  Rows left out of the loss are audited too: their tokens were sampled all the same.
* ``episode_seconds``: the wall time covered by at least one running episode (the union of the
  ``episode_began`` / ``episode_ended`` spans ``CodingAgentLoop`` records).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
from pydantic import BaseModel, Field
from verl.protocol import DataProto

from coding_framework.training.auditor import AuditReport, audit
from coding_framework.training.trajectory import Trajectory
from coding_framework.training.verl.interop import from_data_proto, loss_masked

if TYPE_CHECKING:
    from coding_framework.llm.adapters import RoleAdapters

__all__ = ["MaskSummary", "drift", "drift_tokens", "episode_seconds", "mask_summary"]


class MaskSummary(BaseModel):
    response_tokens: int = Field(description="Response tokens over all rows (attention mask).")
    trained_tokens: int = Field(description="Tokens the policy generated (response_mask sum).")
    feedback_tokens: int = Field(description="Response tokens the agent loop inserted (mask 0).")
    per_row_trained: list[int]
    consistent: bool = Field(description="Masks inside the responses and equal to the calls' lengths.")
    problems: list[str] = Field(default_factory=list)


def mask_summary(batch: DataProto) -> MaskSummary:
    """Totals and consistency of ``response_mask`` against ``attention_mask`` and the recorded calls."""
    b = batch.batch
    width = b["prompts"].shape[1]
    in_response = b["attention_mask"][:, width:].bool()  # (B, R)
    mask = b["response_mask"].bool()  # (B, R)
    problems = []
    if bool((mask & ~in_response).any()):
        problems.append("response_mask is set on padding")
    per_row = mask.sum(-1).tolist()
    metadata = batch.non_tensor_batch["metadata"]
    for i, calls in enumerate(batch.non_tensor_batch["calls"]):
        expected = 0 if loss_masked(metadata[i]) else sum(int(c["length"]) for c in calls)
        if per_row[i] != expected:
            problems.append(f"row {i}: response_mask sums to {per_row[i]}, its calls generated {expected}")
    response = int(in_response.sum())
    return MaskSummary(response_tokens=response, trained_tokens=int(mask.sum()),
                       feedback_tokens=response - int(mask.sum()), per_row_trained=per_row,
                       consistent=not problems, problems=problems)


def drift_tokens(report: AuditReport, trajectories: Sequence[Trajectory]) -> int:
    """Generated tokens off in logprob, plus every token of a call whose decoded text differs."""
    text_tokens = 0
    for issue in report.issues:
        if issue.kind == "text":
            call = next(c for c in trajectories[issue.trajectory].calls if c.turn == issue.turn)
            text_tokens += call.length
    return report.offending_tokens + text_tokens


def drift(batch: DataProto, model: torch.nn.Module, tokenizer: Any, tolerance: float,
          adapters: RoleAdapters | None = None) -> tuple[AuditReport, int]:
    """The audit of the batch's trajectories and its ``drift_tokens``. With ``adapters`` (on ``model``)
    the rows run through their role's adapter; verl trains one role, so the rows share it."""
    trajectories = from_data_proto(batch)
    if adapters is None:
        report = audit(trajectories, model, tokenizer, tolerance=tolerance)
        return report, drift_tokens(report, trajectories)
    roles = sorted({t.role for t in trajectories})
    if len(roles) > 1:
        raise ValueError(f"the batch holds rows of roles {roles}; verl's agent loop trains one role")
    with adapters.using(adapters.adapter_for(roles[0] if roles else None)):
        report = audit(trajectories, model, tokenizer, tolerance=tolerance)
    return report, drift_tokens(report, trajectories)


def episode_seconds(batch: DataProto) -> float:
    """Wall time during which at least one episode of the batch was running."""
    spans = sorted((float(m["episode_began"]), float(m["episode_ended"]))
                   for m in batch.non_tensor_batch["metadata"])
    total, start, end = 0.0, *spans[0]
    for began, ended in spans[1:]:
        if began > end:
            total, start = total + end - start, began
        end = max(end, ended)
    return total + end - start
