"""A training report: reward and pass-rate curves as a PNG (matplotlib, no display) and an HTML page."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from coding_framework.training.run.evals import slice_metrics
from coding_framework.training.run.heldout import HeldoutResult
from coding_framework.training.run.results import StepRecord

_PANELS = (
    ("Reward", ("reward_mean", "heldout_reward_mean"), "reward"),
    ("Pass rate", ("pass_rate", "first_draft_pass_rate", "heldout_pass@1"), "share of episodes"),
    ("KL / entropy", ("kl/ref", "losses/approx_kl", "losses/entropy"), "nats"),
    ("Seconds per step", ("seconds/rollout", "seconds/update", "seconds/eval"), "s"),
)


def _benchmark_keys(history: Sequence[StepRecord]) -> list[str]:
    """The benchmark slices' ``eval/<label>/pass@1`` series the run logged, sorted."""
    return sorted({k for r in history for k in r.metrics if k.startswith("eval/") and k.endswith("/pass@1")})


def _series(history: Sequence[StepRecord], key: str) -> tuple[list[int], list[float]]:
    points = [(r.step, r.metrics[key]) for r in history if key in r.metrics]
    return [p[0] for p in points], [p[1] for p in points]


def plot(history: Sequence[StepRecord], path: Path, title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(11, 7))
    for ax, (name, keys, unit) in zip(axes.flat, _PANELS, strict=True):
        for key in (*keys, *_benchmark_keys(history)) if name == "Pass rate" else keys:
            xs, ys = _series(history, key)
            if xs:
                ax.plot(xs, ys, marker="o" if len(xs) < 30 else None, markersize=3, label=key)
        ax.set_title(name)
        ax.set_xlabel("step")
        ax.set_ylabel(unit)
        ax.grid(alpha=0.3)
        if ax.has_data():
            ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _table(rows: Mapping[str, Any]) -> str:
    cells = "".join(
        f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(_fmt(v))}</td></tr>" for k, v in rows.items()
    )
    return f"<table>{cells}</table>"


def _fmt(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def write_report(
    history: Sequence[StepRecord], out_dir: Path, title: str, summary: Mapping[str, Any]
) -> dict[str, Path]:
    """``report.png`` and ``report.html`` (plot, summary, every step's main metrics) in ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    png = plot(history, out_dir / "report.png", title)
    keys = [
        "reward_mean",
        "reward_std",
        "pass_rate",
        "heldout_pass@1",
        "kl/ref",
        "losses/entropy",
        "losses/clipfrac",
        "charts/tokens_per_s",
        "seconds/step",
    ]
    shown = [k for k in [*keys, *_benchmark_keys(history)] if any(k in r.metrics for r in history)]
    head = "".join(f"<th>{html.escape(k)}</th>" for k in ["step", *shown])
    body = "".join(
        "<tr>"
        + f"<td>{r.step}</td>"
        + "".join(f"<td>{_fmt(r.metrics[k]) if k in r.metrics else ''}</td>" for k in shown)
        + "</tr>"
        for r in history
    )
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse;margin:1em 0}}
td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}}</style></head>
<body><h1>{html.escape(title)}</h1>
{_table(summary)}
<img src="{png.name}" alt="training curves" style="max-width:100%">
<h2>Steps</h2><table><tr>{head}</tr>{body}</table>
</body></html>
"""
    page_path = out_dir / "report.html"
    page_path.write_text(page, encoding="utf-8")
    return {"png": png, "html": page_path}


def write_run_report(out_dir: Path, title: str, algorithm: str, step: int, history: Sequence[StepRecord],
                     last: dict[str, float], baseline: HeldoutResult | None,
                     baseline_slices: Mapping[str, HeldoutResult], final: HeldoutResult) -> dict[str, Path]:
    """The report of a run that ended at ``step``: its steps, the last one's metrics replaced by ``last``
    (its final evaluation included), and the baseline as step 0 when there is one."""
    summary = {
        "algorithm": algorithm,
        "steps": step,
        "baseline heldout pass@1": baseline.pass_at_1 if baseline else None,
        "final heldout pass@1": final.pass_at_1,
        "heldout problems": final.problems,
    }
    rows = [*history[:-1], StepRecord(step=step, metrics=last)]
    if baseline is not None:
        rows.insert(0, StepRecord(step=0, metrics={**baseline.metrics(), **slice_metrics(baseline_slices)}))
    return write_report(rows, out_dir, title, summary)
