"""The sweep as a picture: each trial's metric per step (matplotlib, no display); trials that ASHA stopped
end in a cross, the best trial is drawn thick."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from coding_framework.training.sweep.tracking import STOPPED_EARLY

__all__ = ["plot_sweep"]


def _label(params: dict[str, Any]) -> str:
    return ", ".join(f"{k.rsplit('.', 1)[-1]}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                     for k, v in params.items())


def plot_sweep(trials: list[dict[str, Any]], best: dict[str, Any] | None, metric: str, path: Path) -> Path:
    """``trials`` as in ``SweepResults.trials`` (each with its ``curve`` of [step, value] pairs)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(9, 5))
    for trial in trials:
        if not trial["curve"]:
            continue
        steps, values = zip(*trial["curve"], strict=True)
        is_best = best is not None and trial["trial_id"] == best["trial_id"]
        (line,) = ax.plot(steps, values, marker="o", markersize=3, linewidth=2.5 if is_best else 1.2,
                          label=f"{_label(trial['params'])} ({trial['status']})")
        if trial["status"] == STOPPED_EARLY:
            ax.plot(steps[-1], values[-1], marker="x", markersize=10, color=line.get_color())
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("training step")
    ax.set_ylabel(metric)
    ax.set_title(f"sweep: {metric} per trial (x: stopped early by ASHA)")
    ax.grid(alpha=0.3)
    if ax.has_data():
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
