"""What a run shows as it goes: a progress bar of its steps on stderr, and each step's peak memory."""

from __future__ import annotations

import resource

import torch
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

__all__ = ["peak_memory", "step_info", "step_progress"]


def step_progress(enabled: bool) -> Progress:
    """The steps' bar (a task's ``info`` field holds ``step_info``); silent unless ``enabled``."""
    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TextColumn("{task.fields[info]}"))
    return Progress(*columns, console=Console(stderr=True), disable=not enabled)


def step_info(metrics: dict[str, float]) -> str:
    """A step's reward, pass rate and, when measured, held-out pass@1 and KL, for the bar."""
    parts = [f"reward {metrics['reward_mean']:.3f}", f"pass {metrics['pass_rate']:.2f}"]
    if "heldout_pass@1" in metrics:
        parts.append(f"heldout {metrics['heldout_pass@1']:.2f}")
    if "kl/ref" in metrics:
        parts.append(f"kl {metrics['kl/ref']:.4f}")
    return "  ".join(parts)


def peak_memory(device: torch.device) -> dict[str, float]:
    """``memory/peak_mb``: this step's peak CUDA allocation, or on the CPU the process's peak RSS so far."""
    if device.type == "cuda":
        return {"memory/peak_mb": torch.cuda.max_memory_allocated(device) / 2**20}
    return {"memory/peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
