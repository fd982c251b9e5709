"""Audit trajectories against the policy: are they what the model actually generated, token for token?

For every trajectory the auditor runs the model once over ``prompt_ids + response_ids`` (fp32,
unpadded) and checks:

* **logprobs**: each generated token's recorded logprob equals the teacher-forced ``log p(token |
  prefix)`` within ``tolerance`` (the rollout's KV-cached decoding and one full forward differ only by
  fp32 rounding, ~1e-6 on CPU). A re-tokenized history shifts or changes the ids, so the recorded
  logprobs no longer describe them; a tampered or stale (other policy version) logprob shows up too;
* **text**: decoding each call's mask-1 ids reproduces the text the engine returned for it, exactly;
* **structure**: mask-0 tokens carry logprob 0.0.

Run it with the weights that sampled the trajectories (same policy version), in fp32.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import torch
from pydantic import BaseModel, Field

from coding_framework.training.trajectory import Trajectory

IssueKind = Literal["logprob", "text", "structure"]


class AuditIssue(BaseModel):
    """One problem: which trajectory (index in the audited list), which turn, what went wrong."""

    trajectory: int
    task_id: str
    turn: int | None
    kind: IssueKind
    detail: str
    offending_tokens: int = 0
    max_abs_diff: float = 0.0


class AuditReport(BaseModel):
    tolerance: float
    trajectories: int
    checked_tokens: int = Field(description="Generated tokens whose logprob was recomputed.")
    offending_tokens: int = Field(description="Generated tokens whose logprob is off by over the tolerance.")
    max_abs_diff: float
    mean_abs_diff: float
    issues: list[AuditIssue] = Field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.issues

    def summary(self) -> str:
        head = (f"{self.trajectories} trajectories, {self.checked_tokens} generated tokens: "
                f"max |logprob diff| {self.max_abs_diff:.3g} (mean {self.mean_abs_diff:.3g}, "
                f"tolerance {self.tolerance:g}), "
                f"{self.offending_tokens} over tolerance")
        if self.passed:
            return f"audit passed: {head}"
        lines = [f"audit FAILED: {head}; {len(self.issues)} issue(s):"]
        lines += [f"  trajectory {i.trajectory} ({i.task_id}) turn {i.turn}: [{i.kind}] {i.detail}"
                  for i in self.issues[:20]]
        if len(self.issues) > 20:
            lines.append(f"  ... and {len(self.issues) - 20} more")
        return "\n".join(lines)


@torch.no_grad()
def teacher_forced_logprobs(model: torch.nn.Module, ids: Sequence[int], start: int) -> torch.Tensor:
    """fp32 ``log p(ids[t] | ids[:t])`` for t in [start, len(ids)), from one unpadded forward pass."""
    device = next(model.parameters()).device
    x = torch.tensor([list(ids)], device=device)  # (1, T)
    # The LM head on the positions that predict ids[start:] only: prompts are most of a row's tokens.
    keep = x.shape[1] - start + 1
    logits = model(input_ids=x, logits_to_keep=keep).logits[0, :-1].float()  # (T - start, V)
    return torch.log_softmax(logits, dim=-1).gather(-1, x[0, start:].unsqueeze(-1)).squeeze(-1).cpu()


def _audit_one(index: int, traj: Trajectory, recomputed: torch.Tensor, tokenizer: Any,
               tolerance: float) -> tuple[list[AuditIssue], torch.Tensor]:
    """Issues of one trajectory and the |diff| of its generated tokens."""
    issues: list[AuditIssue] = []
    mask = torch.tensor(traj.response_mask, dtype=torch.bool)  # (R,)
    recorded = torch.tensor(traj.response_logprobs, dtype=torch.float64)  # (R,)
    diff = (recorded - recomputed.double()).abs()  # (R,)
    if bool((recorded[~mask] != 0).any()):
        issues.append(AuditIssue(trajectory=index, task_id=traj.task_id, turn=None, kind="structure",
                                 detail="mask-0 tokens carry non-zero logprobs"))
    for call in traj.calls:
        span = diff[call.start : call.end]
        bad = int((span > tolerance).sum())
        if bad:
            first = int((span > tolerance).nonzero()[0])
            issues.append(AuditIssue(
                trajectory=index, task_id=traj.task_id, turn=call.turn, kind="logprob", offending_tokens=bad,
                max_abs_diff=float(span.max()),
                detail=f"{bad}/{call.length} generated tokens differ from the policy's teacher-forced "
                       f"logprobs by more than {tolerance:g} (max {float(span.max()):.3g}, first at "
                       f"response position {call.start + first}, policy version {call.policy_version})"))
        decoded = tokenizer.decode(traj.response_ids[call.start : call.end], skip_special_tokens=True)
        if decoded != call.text:
            at = next((i for i, (a, b) in enumerate(zip(decoded, call.text, strict=False)) if a != b),
                      min(len(decoded), len(call.text)))
            issues.append(AuditIssue(
                trajectory=index, task_id=traj.task_id, turn=call.turn, kind="text",
                detail=f"decoding the generated ids does not reproduce the engine's text (first "
                       f"difference at character {at}: {decoded[at : at + 20]!r} vs "
                       f"{call.text[at : at + 20]!r})"))
    return issues, diff[mask]


def audit(trajectories: Sequence[Trajectory], model: torch.nn.Module, tokenizer: Any,
          tolerance: float = 1e-4) -> AuditReport:
    """Check every trajectory against ``model`` (the policy that sampled them) and ``tokenizer``."""
    if tolerance <= 0:
        raise ValueError(f"tolerance must be > 0, got {tolerance}")
    was_training = model.training
    model.eval()
    issues: list[AuditIssue] = []
    diffs: list[torch.Tensor] = []
    try:
        for i, traj in enumerate(trajectories):
            recomputed = teacher_forced_logprobs(model, traj.ids, len(traj.prompt_ids))  # (R,)
            found, diff = _audit_one(i, traj, recomputed, tokenizer, tolerance)
            issues += found
            diffs.append(diff)
    finally:
        model.train(was_training)
    every = torch.cat(diffs) if diffs else torch.zeros(0, dtype=torch.float64)
    empty = every.numel() == 0
    return AuditReport(
        tolerance=tolerance, trajectories=len(trajectories), checked_tokens=int(every.numel()),
        offending_tokens=int((every > tolerance).sum()), max_abs_diff=0.0 if empty else float(every.max()),
        mean_abs_diff=0.0 if empty else float(every.mean()), issues=issues,
    )


def tally(reports: Mapping[str, AuditReport], totals: dict[str, float], per_role: bool) -> dict[str, float]:
    """One audit's metrics over every role's report (with ``per_role``, each role's drift too), the
    reports added to the run's running ``totals``."""
    metrics = {"audit/offending_tokens": 0.0, "audit/max_abs_diff": 0.0}
    for role, report in reports.items():
        for key in ("trajectories", "checked_tokens", "offending_tokens"):
            totals[key] += float(getattr(report, key))
        totals["max_abs_diff"] = max(totals["max_abs_diff"], report.max_abs_diff)
        metrics["audit/offending_tokens"] += float(report.offending_tokens)
        metrics["audit/max_abs_diff"] = max(metrics["audit/max_abs_diff"], report.max_abs_diff)
        if per_role:
            metrics[f"audit/{role}/offending_tokens"] = float(report.offending_tokens)
            metrics[f"audit/{role}/max_abs_diff"] = report.max_abs_diff
    return metrics
