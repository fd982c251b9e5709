"""What a problem set holds: counts, test counts, pass-rate and kill-rate distributions, and their plot."""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from coding_framework.problems import Problem

BINS = 10


def test_count(problem: Problem) -> int:
    """Assertions in the tests: top-level statements for ``asserts``, ``assert``s in ``check`` otherwise."""
    try:
        tree = ast.parse(problem.test_code)
    except SyntaxError:
        return 0
    if problem.test_format == "asserts":
        return sum(isinstance(n, ast.Assert) for n in tree.body) or len(tree.body)
    return sum(isinstance(n, ast.Assert) for n in ast.walk(tree))


def histogram(values: Sequence[float], bins: int = BINS) -> list[int]:
    """Counts of ``values`` in [0, 1] over ``bins`` equal bins (1.0 falls in the last)."""
    counts = [0] * bins
    for v in values:
        counts[min(int(v * bins), bins - 1)] += 1
    return counts


def dataset_stats(problems: Sequence[Problem], min_kill_rate: float | None = None) -> dict[str, Any]:
    """Counts by source and difficulty, test counts, and pass/kill-rate summaries where measured."""
    tests = [test_count(p) for p in problems]
    passes = [p.pass_rate for p in problems if p.pass_rate is not None]
    kills = [p.kill_rate for p in problems if p.kill_rate is not None]
    out: dict[str, Any] = {
        "problems": len(problems),
        "by_source": dict(Counter(p.source.split(":")[0] or "unknown" for p in problems)),
        "by_difficulty": dict(Counter(p.difficulty for p in problems)),
        "augmented": sum(p.lineage is not None for p in problems),
        "tests": {
            "min": min(tests, default=0),
            "mean": sum(tests) / max(1, len(tests)),
            "max": max(tests, default=0),
        },
        "ranked": len(passes),
        "measured": len(kills),
    }
    if passes:
        out["pass_rate"] = {"mean": sum(passes) / len(passes), "histogram": histogram(passes)}
    if kills:
        out["kill_rate"] = {
            "mean": sum(kills) / len(kills),
            "mutants": sum(p.mutants for p in problems),
            "histogram": histogram(kills),
        }
        if min_kill_rate is not None:
            out["kill_rate"]["flagged"] = sum(k < min_kill_rate for k in kills)
    return out


def plot_distributions(problems: Sequence[Problem], path: str | Path, title: str = "") -> Path | None:
    """Histograms of the pass and kill rates present, as a PNG at ``path``; None when neither is."""
    series = [
        (name, values)
        for name, values in (
            ("pass rate", [p.pass_rate for p in problems if p.pass_rate is not None]),
            ("kill rate", [p.kill_rate for p in problems if p.kill_rate is not None]),
        )
        if values
    ]
    if not series:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(series), figsize=(5 * len(series), 3.5), squeeze=False)
    for ax, (name, values) in zip(axes[0], series, strict=True):
        ax.hist(values, bins=BINS, range=(0.0, 1.0), color="tab:blue", edgecolor="white")
        ax.set_xlabel(name)
        ax.set_ylabel("problems")
        ax.set_title(f"{title} {name} (n={len(values)})".strip())
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out
