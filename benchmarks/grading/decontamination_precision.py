"""Precision and recall of decontamination (text and behaviour) on MBPP outside MBPP-test against HumanEval
and MBPP-test, and its drops on all 974 MBPP problems.

Reproduce (from the repo root, with ../shared/data present, or pass --data-dir):

    .venv/bin/python -m benchmarks.grading.decontamination_precision

**The labelled set** (tests/fixtures/decontamination_labels.jsonl, one pair a line with its label and a
short reason; drawn without the detector's candidates, and labelled by reading both statements, references
and tests):

- every pair (an MBPP problem outside MBPP-test, a HumanEval or MBPP-test problem) whose references pass
  each other's tests both ways: all 140,697 pairs whose entry points take the same number of arguments
  were screened one way, and each pass was graded both ways in the grader (112 pairs);
- every other pair with a lexical overlap of 0.8 or more (the largest n-gram containment of the statement,
  the solution or the tests at 4-grams; 41 pairs), and 12 pairs drawn (seed 44) from each lower band
  (0.6-0.8, 0.4-0.6, 0.2-0.4, above 0 to 0.2, and 0: the 312,789 pairs that share nothing).

A pair is the **same task** when the statements ask for the same function of the same kind of input, told
in other words or with a method named ("using regex", "heap sort"); a sibling with another answer (even vs
odd, cone vs cube), or another problem whose answers coincide (a rhombus's perimeter and a square's, tiling
and Fibonacci), is different. The older set of 607 pairs (tests/fixtures/decontamination_pairs.json: the
pairs the old candidate search found at overlap 0.3 or more, labelled by the grading rule) is scored too,
with the three labels the reading found wrong fixed. A statement threshold of 1.0 is left out of the sweep: it
turns the paraphrase check off, and problems the behaviour check cannot run (stdin/stdout, unittest) have
only the text check.

A pair is **flagged** when the text check matches the benchmark problem (an exact field, or a field's
n-gram containment at or above its threshold) or, with the behaviour check, when the pair is a candidate
(``call_compatible``) and passes both ways in the grader. Precision is the share of flagged labelled pairs
that are the same task; recall the share of same-task pairs flagged. The defaults are the most precise
setting whose recall on the new set is at least ``RECALL_FLOOR``, not the best F1: a leak costs more than
a lost training problem. Then ``evaluation.decontamination.decontaminate`` with those defaults runs on all
974 MBPP problems: the 474 outside MBPP-test against HumanEval and MBPP-test, the 500 of MBPP-test against
HumanEval. Grader verdicts are cached in --cache.
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.harness import RESULTS, ROOT, LoadMonitor, write_result
from coding_framework.config import SandboxConfig
from coding_framework.evaluation.decontamination import BehaviourCache, decontaminate, same_behaviour
from coding_framework.grading import Grader
from coding_framework.problems import Problem, load_benchmark
from coding_framework.problems.decontaminate import (
    MIRROR_SETTINGS,
    DecontaminationSettings,
    behaviour_candidates,
    call_compatible,
    candidate_matches,
    find_contamination,
)

OUT = RESULTS / "decontamination_precision.json"
LABELS = ROOT / "tests" / "fixtures" / "decontamination_labels.jsonl"
OLD_LABELS = ROOT / "tests" / "fixtures" / "decontamination_pairs.json"
DEFAULT_DATA = ROOT.parent / "shared" / "data"
CACHE = ROOT / ".cache" / "decontamination_verdicts.json"
NGRAMS, MIN_NGRAMS = (4, 5, 6), (3, 6, 10)
STATEMENT, SOLUTION = (0.4, 0.5, 0.6, 0.7, 0.8, 0.9), (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
RECALL_FLOOR = 0.95
OLD_DEFAULTS = {"ngram": 5, "min_ngrams": 6, "statement_overlap": 0.7, "solution_overlap": 1.0}

Pair = tuple[str, str]


def load_sets(data_dir: Path) -> tuple[list[Problem], list[Problem], list[Problem]]:
    """MBPP outside MBPP-test, MBPP-test, HumanEval."""
    mbpp = load_benchmark("mbpp", data_dir / "mbpp" / "mbpp.jsonl")
    test = load_benchmark("mbpp", data_dir / "mbpp" / "mbpp.jsonl", split="test")
    test_ids = {p.task_id for p in test}
    he = load_benchmark("humaneval", data_dir / "humaneval" / "HumanEval.jsonl.gz")
    return [p for p in mbpp if p.task_id not in test_ids], test, he


def text_overlaps(train: list[Problem], against: dict[str, list[Problem]]
                  ) -> dict[tuple[int, int], dict[Pair, dict[str, float]]]:
    """(ngram, min_ngrams) -> pair -> field -> the best overlap (``exact`` -> 1.0 when a field is equal)."""
    out: dict[tuple[int, int], dict[Pair, dict[str, float]]] = {}
    for n, m in itertools.product(NGRAMS, MIN_NGRAMS):
        found = candidate_matches(train, against, DecontaminationSettings(ngram=n, min_ngrams=m))
        pairs: dict[Pair, dict[str, float]] = {}
        for task_id, matches in found.items():
            for c in matches:
                field = "exact" if c.kind.startswith("exact_") else c.field
                best = pairs.setdefault((task_id, c.matched), {})
                best[field] = max(best.get(field, 0.0), c.overlap)
        out[(n, m)] = pairs
    return out


def text_flags(overlaps: dict[Pair, dict[str, float]], statement: float, solution: float) -> set[Pair]:
    limits = {"exact": 1.0, "statement": statement, "solution": solution, "tests": solution}
    return {pair for pair, fields in overlaps.items() if any(v >= limits[f] for f, v in fields.items())}


def score(flagged: set[Pair], labels: dict[Pair, bool]) -> dict[str, Any]:
    hits = {p for p in labels if p in flagged}
    tp = sum(labels[p] for p in hits)
    positives = sum(labels.values())
    return {"flagged": len(hits), "true_positives": tp,
            "precision": round(tp / len(hits), 4) if hits else None,
            "recall": round(tp / positives, 4) if positives else None,
            "missed": sorted(f"{a} / {b}" for (a, b), same in labels.items() if same and (a, b) not in hits),
            "wrongly_flagged": sorted(f"{a} / {b}" for a, b in hits if not labels[(a, b)])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cache", type=Path, default=CACHE, help="Grader verdicts, read and updated.")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    with LoadMonitor() as load:
        train, test, he = load_sets(args.data_dir)
        against = {"humaneval": he, "mbpp:test": test}
        by_id = {p.task_id: p for p in [*train, *test, *he]}
        rows = [json.loads(line) for line in LABELS.read_text().splitlines()]
        new = {(r["train"], r["benchmark"]): bool(r["same_task"]) for r in rows}
        old_rows = json.loads(OLD_LABELS.read_text())["pairs"]
        old = {(r["train"], r["benchmark"]): bool(r["same_task"]) for r in old_rows}
        cache = BehaviourCache(args.cache)
        with Grader(SandboxConfig(workers=args.workers)) as grader:
            labelled = sorted(new.keys() | old.keys())
            candidates = [p for p in labelled if call_compatible(by_id[p[0]], by_id[p[1]])]
            verdicts = same_behaviour([(by_id[a], by_id[b]) for a, b in candidates], grader, cache)
            behaviour = {p for p, same in zip(candidates, verdicts, strict=True) if same}
            cache.save()
            overlaps = text_overlaps(train, against)
            sweep = []
            for (n, m), st, so in itertools.product(overlaps, STATEMENT, SOLUTION):
                text = text_flags(overlaps[(n, m)], st, so)
                sweep.append({"ngram": n, "min_ngrams": m, "statement_overlap": st, "solution_overlap": so,
                              "text": score(text, new), "text_and_behaviour": score(text | behaviour, new),
                              "old_set_text": score(text, old),
                              "old_set_text_and_behaviour": score(text | behaviour, old)})
            chosen = _choose(sweep)
            shipped = DecontaminationSettings.for_mirror_tasks("keep")
            settings = {k: getattr(shipped, k) for k in OLD_DEFAULTS}
            all_mbpp = _all_mbpp(train, test, he, shipped, grader, cache)
    figures: dict[str, Any] = {
        "train_problems": len(train), "against": {k: len(v) for k, v in against.items()},
        "labelled_pairs": len(new), "same_task_pairs": sum(new.values()),
        "labelled_by_draw": dict(Counter(r["drawn"] for r in rows)),
        "same_task_by_draw": dict(Counter(r["drawn"] for r in rows if r["same_task"])),
        "old_set_pairs": len(old), "old_set_same_task_pairs": sum(old.values()),
        "behaviour_candidates_of_labelled": len(candidates), "pass_both_ways_of_labelled": len(behaviour),
        "recall_floor": RECALL_FLOOR,
        "before": _row(sweep, OLD_DEFAULTS),
        "chosen": chosen,
        "shipped": _row(sweep, settings),
        "shipped_matches_chosen": all(chosen[k] == v for k, v in settings.items()),
        "mirror_settings": MIRROR_SETTINGS,
        "all_mbpp": all_mbpp,
    }
    print(json.dumps({k: v for k, v in figures.items() if k != "all_mbpp"}, indent=1))
    print(json.dumps({k: v for k, v in all_mbpp.items() if k != "drops"}, indent=1))
    lists = ("missed", "wrongly_flagged")
    brief = [{k: {m: v for m, v in s.items() if m not in lists} if isinstance(s, dict) else s
              for k, s in row.items()} for row in sweep]
    write_result(args.out, figures | {"sweep": brief}, load)


def _choose(sweep: list[dict[str, Any]]) -> dict[str, Any]:
    """The most precise setting with text and behaviour whose recall is at least the floor (then the higher
    thresholds: fewer honest problems lost elsewhere); the best recall when none reaches it."""
    scored = [r for r in sweep if r["text_and_behaviour"]["recall"] is not None]
    floor = [r for r in scored if r["text_and_behaviour"]["recall"] >= RECALL_FLOOR]
    if floor:
        return max(floor, key=lambda r: (r["text_and_behaviour"]["precision"] or 0, r["statement_overlap"],
                                          r["solution_overlap"], r["min_ngrams"], r["ngram"]))
    return max(scored, key=lambda r: (r["text_and_behaviour"]["recall"],
                                      r["text_and_behaviour"]["precision"] or 0))


def _all_mbpp(train: list[Problem], test: list[Problem], he: list[Problem],
              settings: DecontaminationSettings, grader: Grader, cache: BehaviourCache) -> dict[str, Any]:
    """The shipped check on every MBPP problem: outside MBPP-test against HumanEval and MBPP-test, MBPP-test
    against HumanEval; before (text at the old defaults) and after."""
    old, both = DecontaminationSettings(**OLD_DEFAULTS), {"humaneval": he, "mbpp:test": test}
    runs = {
        "before": {**decontaminate(train, both, old), **decontaminate(test, {"humaneval": he}, old)},
        "after": {**decontaminate(train, both, settings, grader, cache),
                  **decontaminate(test, {"humaneval": he}, settings, grader, cache)},
    }
    by_text = find_contamination(train, both, settings)
    kept = [p for p in train if p.task_id not in by_text]
    out: dict[str, Any] = {"problems": len(train) + len(test),
                           "behaviour_candidates_outside_mbpp_test": len(behaviour_candidates(kept, both))}
    for name, hits in runs.items():
        kinds, sets = Counter(c.drop_kind for c in hits.values()), Counter(c.against for c in hits.values())
        out[name] = {"dropped": len(hits), "by_kind": dict(sorted(kinds.items())),
                     "by_benchmark": dict(sorted(sets.items()))}
    out["drops"] = [{"task_id": t, "against": c.against, "matched": c.matched, "kind": c.drop_kind,
                     "match": c.kind, "overlap": round(c.overlap, 4)} for t, c in runs["after"].items()]
    return out


def _row(sweep: list[dict[str, Any]], key: dict[str, Any]) -> dict[str, Any]:
    return next(r for r in sweep if all(r[k] == v for k, v in key.items()))


if __name__ == "__main__":
    main()
