"""A shared single policy, one shared LoRA adapter and per-role LoRA adapters, with an LLM Reviewer.

Reproduce:  .venv/bin/python -m benchmarks.training.per_role_compare --seeds 0 1 2

or one seed per process, side by side, then pooled (how the committed result was made, on a busy machine):

    for s in 0 1 2; do .venv/bin/python -m benchmarks.training.per_role_compare --seeds $s \
        --arms shared_lora per_role shared --out benchmarks/results/per_role_compare_parts/seed$s.json & done
    wait; .venv/bin/python -m benchmarks.training.per_role_compare \
        --combine benchmarks/results/per_role_compare_parts/*.json

The result file is rewritten after every finished run (``runs_done`` of ``runs_planned``).

Same embedded base, same budget, two-round episodes (draft, the Executor's verdict and the LLM Reviewer's
review, one revision), GRPO, for each seed:

- ``shared``: today's setup: one policy, fully fine-tuned at the quickstart's rate, writes the code and the
  reviews, and only the Generator's tokens train, on the episode's correctness reward;
- ``shared_lora``: one LoRA adapter on the base that both roles call through (``policies.mode:
  shared_lora``), trained on the Generator's tokens (correctness) and the Reviewer's (``rewards.
  review_credit``), at ``per_role``'s learning rate, after the same warm start: the same review SFT
  examples (same problems, seeds and settings) trained into the one adapter;
- ``per_role``: the Generator and the Reviewer as LoRA adapters on the base (``policies.mode:
  per_role_lora``), each trained on its own credit: the Generator on correctness, the Reviewer on reviews
  that lead to fixes (``rewards.review_credit``), after the Reviewer's warm start (``training.review_sft``,
  ``--no-warm-start`` skips it in both LoRA arms; its episodes are outside the RL budget).

``per_role`` vs ``shared_lora`` isolates separate adapters per role; ``shared_lora`` vs ``shared`` is LoRA
at its own rate with the Reviewer's warm start and credit against full fine-tuning of the Generator alone.

Reported: held-out pass@1 after review and revision (two-round eval episodes, T=0.6, 2 samples per
problem), and the review usefulness rate on the held-out episodes (the share of reviews of failing drafts
after which the next draft passed more tests) before and after training, per seed and mean +- sd. All arms
of a seed start from the same weights and evaluate the same problems with the same seeds, so one baseline
per seed serves them all, and the arms are compared paired by seed (``COMPARISONS``): a paired t-test and
an exact sign-flip test on the three seeds' pass@1 (with 3 seeds no two-sided p can fall below 0.25 in the
sign-flip test), and, pooled over seeds, an exact sign test and a sign-flip permutation test on the
per-problem pass rates (each problem's 2 samples). The pooled tests hold the trained models fixed: they
say whether these models differ on these problems, not whether another training seed would.

The budget (``BUDGET``): 4 steps of 8 problems x 4 episodes, 128 draft tokens, 48 review tokens, 50 held-out
problems; one run takes about 2-3 minutes alone on a 2-core AMD EPYC (the LoRA arms' warm start adds about
a minute), so 3 seeds x 3 arms take about half an hour alone, more under load (the result records the
load). ``--tiny`` (2 steps of 4 x 4, 20 held-out problems) checks that the script works. The LoRA rate
(``LORA_LR``) was tuned on seed 0's ``per_role`` arm, which favours ``per_role`` on seed 0 if anything.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import RECORD_KEYS, RESULTS, LoadMonitor, model_sha256, write_result

OUT = RESULTS / "per_role_compare.json"
ARMS = ("shared", "shared_lora", "per_role")
LORA_ARMS = ("shared_lora", "per_role")
# (a, b): a's pass@1 minus b's.
COMPARISONS = (("per_role", "shared_lora"), ("shared_lora", "shared"), ("per_role", "shared"))
ALPHA = 0.05
WARM_START_METRICS = ("reviews", "useful_share", "sft_examples", "loss_first_epoch", "loss_last_epoch")

BUDGET: dict[str, Any] = {
    "steps": 4,
    "rollout.problems_per_step": 8,
    "rollout.group_size": 4,
    "rollout.max_new_tokens": 128,
    "workflow.graph.max_rounds": 2,
    "workflow.graph.review": "on_failure",
    "workflow.agents.reviewer.backend": "llm",
    "workflow.agents.reviewer.sampling.max_new_tokens": 48,
    "workflow.agents.reviewer.sampling.temperature": 0.6,
    "data.heldout_limit": 50,
    "eval.max_rounds": 2,
    "eval.samples": 2,
    "checkpoint.every": 100,
    "tracking.log_checkpoints": False,
    "reviewer_warm_start.problems": 12,
    "reviewer_warm_start.samples": 4,
}
TINY: dict[str, Any] = {"steps": 2, "rollout.problems_per_step": 4, "data.heldout_limit": 20,
                        "reviewer_warm_start.problems": 4, "reviewer_warm_start.samples": 2}
# LoRA trains a zero-initialised low-rank B: at the quickstart's full fine-tuning rate (3e-4) the adapters
# barely move in 4 steps (held-out episodes came out token-identical to the baseline), so they get their own:
# of 3e-3 and 1e-2, tried on seed 0's per_role arm, 1e-2 gave the higher held-out pass@1 (0.23 vs 0.13).
LORA_LR = 1e-2
ARM_OVERRIDES: dict[str, dict[str, Any]] = {
    "shared": {"rollout.trained_roles": ["generator"]},
    "shared_lora": {"rollout.trained_roles": ["generator", "reviewer"], "policies.mode": "shared_lora"},
    "per_role": {"rollout.trained_roles": ["generator", "reviewer"], "policies.mode": "per_role_lora"},
}


def arm_config(arm: str, seed: int, tiny: bool, warm_start: bool, baseline: bool,
               lora_lr: float = LORA_LR) -> Any:
    """The quickstart config with the budget, the arm's roles and the seed; the adapters' learning rate."""
    from coding_framework.config import ConfigError, load_config
    from coding_framework.config.training import TrainingConfig

    if arm in LORA_ARMS and "policies" not in TrainingConfig.model_fields:
        raise ConfigError(f"the {arm} arm needs adapters (TrainingConfig.policies); run --arms shared")
    lr = {"optim.lr": lora_lr, "reviewer_warm_start.lr": lora_lr} if arm in LORA_ARMS else {}
    overrides = {**BUDGET, **(TINY if tiny else {}), **ARM_OVERRIDES[arm], **lr, "seed": seed,
                 "eval.baseline": baseline, "reviewer_warm_start.enabled": arm in LORA_ARMS and warm_start}
    cfg = load_config(TrainingConfig, "quickstart", overrides=overrides)
    # Overrides skip None values: the registry entry (no use here) is switched off on the loaded config.
    return cfg.model_copy(update={"tracking": cfg.tracking.model_copy(update={"registered_model": None})})


def run_one(
    arm: str, seed: int, run_dir: Path, tiny: bool, warm_start: bool, baseline: bool, lora_lr: float
) -> dict[str, Any]:
    from coding_framework.training.run.heldout import HeldoutResult
    from coding_framework.training.trainer import Trainer

    class Recording(Trainer):
        """Keeps the last held-out evaluation (the final one): its per-problem rates feed the tests."""

        last: HeldoutResult | None = None

        def _evaluate(self, grader: Any) -> HeldoutResult:
            self.last = super()._evaluate(grader)
            return self.last

    start = time.perf_counter()
    config = arm_config(arm, seed, tiny, warm_start, baseline, lora_lr)
    trainer = Recording(config, run_dir, progress=True)
    results = trainer.run()
    assert trainer.last is not None
    curve = [r.metrics.get("review/usefulness_rate") for r in results.history]
    return {
        "arm": arm,
        "seed": seed,
        "baseline_pass@1": results.baseline_pass_at_1,
        "baseline_usefulness": _baseline(run_dir, "heldout_review_usefulness"),
        "baseline_reviews_judged": _baseline(run_dir, "heldout_reviews_judged"),
        "pass@1": results.heldout_pass_at_1,
        "baseline_by_task": trainer.baseline.by_task if trainer.baseline else None,
        "by_task": trainer.last.by_task,
        "usefulness": results.final_metrics.get("heldout_review_usefulness"),
        "reviews_judged": results.final_metrics.get("heldout_reviews_judged"),
        "train_usefulness_curve": curve,
        "warm_start": {k: _baseline(run_dir, f"warm_start/{k}") for k in WARM_START_METRICS},
        "audit_offending_tokens": results.audit["offending_tokens"],
        "seconds": time.perf_counter() - start,
    }


def _baseline(run_dir: Path, metric: str) -> float | None:
    """A held-out metric the trainer logged at step 0 (before training), read back from its MLflow store."""
    import mlflow

    run_id = json.loads((run_dir / "tracking.json").read_text())["mlflow_run_id"]
    client = mlflow.MlflowClient(f"sqlite:///{run_dir / 'mlflow.db'}")
    history = client.get_metric_history(run_id, metric)
    at_zero = [m.value for m in history if m.step == 0]
    return at_zero[0] if at_zero else None


def _stats(values: list[float | None]) -> dict[str, float | None]:
    seen = [v for v in values if v is not None]
    if not seen:
        return {"mean": None, "sd": None}
    return {"mean": statistics.fmean(seen), "sd": statistics.stdev(seen) if len(seen) > 1 else 0.0}


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for arm in sorted({r["arm"] for r in rows}):
        mine = [r for r in rows if r["arm"] == arm]
        out[arm] = {key: _stats([r[key] for r in mine]) for key in
                    ("baseline_pass@1", "pass@1", "baseline_usefulness", "usefulness", "seconds")}
    return out


def _seed_pvalues(diffs: list[float]) -> dict[str, Any]:
    """Two-sided p of a paired t-test (3 seeds or more) and of an exact sign-flip test on the per-seed
    differences."""
    from itertools import product

    from scipy.stats import ttest_1samp

    mean = statistics.fmean(diffs)
    # With fewer than 3 seeds (one degree of freedom) the t-test's p rests on its normality assumption alone.
    t_p = float(ttest_1samp(diffs, 0.0).pvalue) if len(diffs) >= 3 and len(set(diffs)) > 1 else None
    flips = [statistics.fmean(s * d for s, d in zip(signs, diffs, strict=True))
             for signs in product((1, -1), repeat=len(diffs))]
    flip_p = sum(abs(f) >= abs(mean) - 1e-12 for f in flips) / len(flips)
    return {"t_test_p": t_p, "sign_flip_exact_p": flip_p}


def _problem_pvalues(diffs: list[float]) -> dict[str, Any]:
    """Two-sided p of an exact sign test and of a sign-flip permutation test on per-problem differences."""
    import numpy as np
    from scipy.stats import binomtest, permutation_test

    wins, losses = sum(d > 0 for d in diffs), sum(d < 0 for d in diffs)
    sign_p = float(binomtest(wins, wins + losses, 0.5).pvalue) if wins + losses else 1.0
    nonzero = np.array([d for d in diffs if d != 0])
    if len(nonzero) == 0:
        return {"wins": wins, "losses": losses, "sign_test_p": sign_p, "permutation_p": 1.0,
                "permutation_exact": True}
    # Zero differences flip to themselves; 2^n sign patterns, enumerated when n <= 17, else 200k samples.
    perm = permutation_test((nonzero,), np.mean, permutation_type="samples", n_resamples=200_000,
                            alternative="two-sided", random_state=0)
    return {"wins": wins, "losses": losses, "sign_test_p": sign_p, "permutation_p": float(perm.pvalue),
            "permutation_exact": len(nonzero) <= 17}


def paired_tests(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Each of ``COMPARISONS`` whose arms both ran: per-seed pass@1 differences and their tests, and the
    per-(seed, problem) pass-rate differences pooled over seeds and their tests."""
    by = {(r["arm"], r["seed"]): r for r in rows}
    out: dict[str, Any] = {}
    for a, b in COMPARISONS:
        seeds = sorted(s for (arm, s) in by if arm == a and (b, s) in by)
        if not seeds:
            continue
        seed_diffs = [by[a, s]["pass@1"] - by[b, s]["pass@1"] for s in seeds]
        problem_diffs = [by[a, s]["by_task"][t] - by[b, s]["by_task"][t]
                         for s in seeds for t in sorted(by[a, s]["by_task"])]
        seed_level = {"seeds": seeds, "diffs": seed_diffs, "mean_diff": statistics.fmean(seed_diffs),
                      **_seed_pvalues(seed_diffs)}
        problem_level = {"pairs": len(problem_diffs), "mean_diff": statistics.fmean(problem_diffs),
                         **_problem_pvalues(problem_diffs)}
        out[f"{a} - {b}"] = {
            "by_seed": seed_level, "by_problem_pooled": problem_level,
            "verdict_by_seed": _verdict(seed_level["t_test_p"], seed_level["sign_flip_exact_p"]),
            "verdict_by_problem": _verdict(problem_level["sign_test_p"], problem_level["permutation_p"]),
        }
    return out


def _verdict(*pvalues: float | None) -> str:
    """``significant`` when any of the tests run gives p < ``ALPHA``."""
    return "significant" if any(p is not None and p < ALPHA for p in pvalues) else "not significant"


def _p(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}"


def tests_table(tests: dict[str, Any]) -> str:
    lines = ["| comparison | pass@1 diff per seed | t-test p | sign-flip p (seeds) | problems +/- | "
             "sign test p | permutation p | verdict (alpha 0.05) |", "|" + "---|" * 8]
    for name, t in tests.items():
        s, q = t["by_seed"], t["by_problem_pooled"]
        diffs = ", ".join(f"{d:+.3f}" for d in s["diffs"])
        lines.append(f"| {name} | {diffs} (mean {s['mean_diff']:+.3f}) | {_p(s['t_test_p'])} | "
                     f"{_p(s['sign_flip_exact_p'])} | {q['wins']}/{q['losses']} of {q['pairs']} | "
                     f"{_p(q['sign_test_p'])} | {_p(q['permutation_p'])} | seeds: {t['verdict_by_seed']}; "
                     f"problems: {t['verdict_by_problem']} |")
    return "\n".join(lines)


def _fmt(stat: dict[str, float | None]) -> str:
    return "n/a" if stat["mean"] is None else f"{stat['mean']:.3f} +- {stat['sd']:.3f}"


def table(summary: dict[str, Any]) -> str:
    lines = ["| arm | pass@1 before | pass@1 after | usefulness before | usefulness after | s/run |",
             "|" + "---|" * 6]
    for arm, s in summary.items():
        lines.append(f"| {arm} | {_fmt(s['baseline_pass@1'])} | {_fmt(s['pass@1'])} | "
                     f"{_fmt(s['baseline_usefulness'])} | {_fmt(s['usefulness'])} | "
                     f"{s['seconds']['mean']:.0f} |")
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    panels = (("pass@1", "held-out pass@1 after review + revision"), ("usefulness", "review usefulness rate"))
    arms = sorted({r["arm"] for r in rows})
    for ax, (key, title) in zip(axes, panels, strict=True):
        for i, arm in enumerate(arms):
            mine = [r for r in rows if r["arm"] == arm]
            for j, (label, field) in enumerate((("before", f"baseline_{key}"), ("after", key))):
                values = [r[field] for r in mine if r[field] is not None]
                x = i * 3 + j
                if values:
                    sd = statistics.stdev(values) if len(values) > 1 else 0.0
                    ax.bar(x, statistics.fmean(values), yerr=sd, color="C0" if j == 0 else "C1",
                           label=label if i == 0 else None, alpha=0.7, capsize=4)
                    ax.scatter([x] * len(values), values, color="k", s=12, zorder=3)
        ax.set_xticks([i * 3 + 0.5 for i in range(len(arms))], arms)
        ax.set_ylim(0, 1 if key == "usefulness" else None)
        ax.set_title(title)
        ax.legend()
    seeds = sorted({r["seed"] for r in rows})
    fig.suptitle(f"full fine-tune, shared LoRA, per-role LoRA; seeds {seeds} "
                 "(bars: mean, whiskers: sd, dots: seeds)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def figures_for(rows: list[dict[str, Any]], settings: dict[str, Any], planned: int) -> dict[str, Any]:
    """The result file's figures over the runs done so far (``planned`` runs were asked for)."""
    summary = summarize(rows)
    tests = paired_tests(rows)
    return {**settings, "runs_planned": planned, "runs_done": len(rows), "runs": rows, "summary": summary,
            "paired_tests": tests, "table": table(summary), "tests_table": tests_table(tests)}


def combine(files: list[Path], out: Path) -> int:
    """One result from the result files of separate invocations (e.g. one per seed, run side by side):
    their runs pooled, the tests redone; each file's machine record (load included) is kept under
    ``parts``."""
    from coding_framework.embedded import ensure_embedded_model

    parts = {str(f): json.loads(f.read_text()) for f in files}
    keys = ("budget", "arm_overrides", "lora_lr", "warm_start")
    first = next(iter(parts.values()))
    model_dir = ensure_embedded_model(arm_config(ARMS[0], 0, False, True, True).embedded)
    if any(part[k] != first[k] for part in parts.values() for k in keys):
        print(f"error: the files differ in {keys}", file=sys.stderr)
        return 2
    if {part["model_sha256"] for part in parts.values()} != {model_sha256(model_dir)}:
        print(f"error: the files were not all measured on {model_dir}", file=sys.stderr)
        return 2
    rows = [row for part in parts.values() for row in part["runs"]]
    planned = sum(part["runs_planned"] for part in parts.values())
    records = {f: {k: part[k] for k in RECORD_KEYS if k != "packages"} for f, part in parts.items()}
    figures = {**figures_for(rows, {k: first[k] for k in keys}, planned), "parts": records}
    write_result(out, figures, model_dir=model_dir)
    plot(rows, out.with_suffix(".png"))
    print(figures["table"])
    print(figures["tests_table"])
    return 0


def main(argv: list[str] | None = None) -> int:
    from coding_framework.config import ConfigError
    from coding_framework.embedded import ensure_embedded_model

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--arms", nargs="+", default=list(ARMS), choices=ARMS,
                    help="in this order for each seed; the first evaluates the seed's baseline")
    ap.add_argument("--tiny", action="store_true", help="a small check that the script works (see TINY)")
    ap.add_argument("--lora-lr", type=float, default=LORA_LR, help="the LoRA arms' learning rate")
    ap.add_argument("--no-warm-start", action="store_true", help="skip the Reviewer's warm start")
    ap.add_argument("--out", type=Path, default=OUT, help="the JSON to write (a .png goes beside it)")
    ap.add_argument("--combine", type=Path, nargs="+", metavar="RESULT",
                    help="pool these result files' runs into --out instead of running anything")
    args = ap.parse_args(argv)
    if args.combine:
        return combine(args.combine, args.out)
    rows: list[dict[str, Any]] = []
    warm = not args.no_warm_start
    settings = {"budget": {**BUDGET, **(TINY if args.tiny else {})}, "arm_overrides": ARM_OVERRIDES,
                "lora_lr": args.lora_lr, "warm_start": warm}
    planned = len(args.seeds) * len(args.arms)
    try:
        configs = [arm_config(arm, args.seeds[0], args.tiny, warm, True, args.lora_lr) for arm in args.arms]
        model_dir = ensure_embedded_model(configs[0].embedded)
        with LoadMonitor() as load, tempfile.TemporaryDirectory(prefix="per-role-") as tmp:
            for seed in args.seeds:
                first: dict[str, Any] = {}
                for i, arm in enumerate(args.arms):
                    row = run_one(arm, seed, Path(tmp) / f"{arm}-{seed}", args.tiny, warm,
                                  baseline=i == 0, lora_lr=args.lora_lr)
                    first = first or row
                    # Same weights, problems and seeds: the seed's first arm's baseline is every arm's.
                    for key in ("baseline_pass@1", "baseline_usefulness", "baseline_reviews_judged",
                                "baseline_by_task"):
                        row[key] = first[key]
                    rows.append(row)
                    # Written after every run, so a run cut short still leaves the runs it finished.
                    write_result(args.out, figures_for(rows, settings, planned), load, model_dir=model_dir)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    figures = figures_for(rows, settings, planned)
    write_result(args.out, figures, load, model_dir=model_dir)
    plot(rows, args.out.with_suffix(".png"))
    print(figures["table"])
    print(figures["tests_table"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
