"""Precision and recall of the decontaminator on MBPP (outside MBPP-test) against HumanEval and MBPP-test.

Reproduce (from the repo root, with ../shared/data present, or pass --data-dir):

    .venv/bin/python -m benchmarks.grading.decontamination_precision       # grade the pairs, then sweep
    .venv/bin/python -m benchmarks.grading.decontamination_precision \
        --labels tests/fixtures/decontamination_pairs.json         # reuse the labels, sweep only

The labelled set: every pair (an MBPP problem outside MBPP-test, a HumanEval or MBPP-test problem) that the
decontaminator's candidate search finds with an overlap of at least --min-overlap in any field (statement,
solution, tests) at any n-gram size of the sweep, under the normalisation before (the string literals'
lower-case words, every entry point renamed in statements) or after the fix. The labelling rule, computed
with the real Grader: a pair is the **same task** when each problem's reference solution, its function
bound to the other's entry point name, passes the other's tests; otherwise **different**. So a mirror or
sibling (even vs odd, min vs max, lcm vs gcd) is a different task, and so is the same idea with another
signature. Where a pair's tests are too weak or its sentinel differs, a hand check overrides the rule
(``HAND``, each with its reason); the pairs the old defaults dropped, and every same-task pair, were read
by hand. A different-task pair is a **mirror** (a sibling with another answer) when its statements differ
by one replaced run of at most two words ("even" / "odd", "largest" / "smallest", "cone" / "cube"). The
labels go to tests/fixtures/decontamination_pairs.json.

A training problem is contaminated when it is the same task as some benchmark problem. For each setting
the script reports, over the training problems, the drops, precision (share of drops that are
contaminated) and recall (share of contaminated problems dropped), and the drops by kind over all 474.
Results go to benchmarks/results/decontamination_precision.json with the machine record.
"""

from __future__ import annotations

import argparse
import difflib
import io
import itertools
import json
import re
import tokenize
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks.harness import RESULTS, ROOT, LoadMonitor, write_result
from coding_framework.config import SandboxConfig
from coding_framework.grading import Grader
from coding_framework.problems import Problem, load_benchmark
from coding_framework.problems import decontaminate as dc
from coding_framework.problems.decontaminate import DecontaminationSettings, candidate_matches

OUT = RESULTS / "decontamination_precision.json"
LABELS = ROOT / "tests" / "fixtures" / "decontamination_pairs.json"
DEFAULT_DATA = ROOT.parent / "shared" / "data"
NGRAMS, MIN_NGRAMS = (4, 5, 6), (3, 6, 10)
HAND = {
    ("Mbpp/602", "Mbpp/217"): (True, "first repeated character: only the no-repeat sentinel differs"),
    ("Mbpp/784", "Mbpp/38"): (False, "product vs division of the first even and odd: the tests divide by 1"),
    ("Mbpp/887", "Mbpp/455"): (False, "odd number vs month with 31 days: the tests coincide"),
    ("Mbpp/887", "Mbpp/72"): (False, "odd number vs difference of two squares: the tests coincide"),
    ("Mbpp/787", "Mbpp/285"): (False, "a followed by three b vs two to three b: the tests coincide"),
}
STATEMENT, SOLUTION = (0.4, 0.5, 0.6, 0.7, 0.8, 0.9), (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def _legacy_words(text: str, entry_point: str = "") -> list[str]:
    found = re.findall(r"[a-z0-9_]+", text.lower())
    name = entry_point.lower()
    return [dc._FN if w == name else w for w in found] if name else found


def _legacy_code_tokens(code: str, entry_point: str = "") -> list[str]:
    try:
        out: list[str] = []
        for t in tokenize.generate_tokens(io.StringIO(code).readline):
            if t.type == tokenize.STRING:
                out += _legacy_words(t.string, entry_point)
            elif t.type in (tokenize.NAME, tokenize.OP, tokenize.NUMBER):
                out.append(dc._FN if t.string == entry_point else t.string)
        return out
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return _legacy_words(code, entry_point)


@contextmanager
def normalisation(name: str) -> Iterator[None]:
    """``before``: the normalisation of commit 27b72b3 (strings as lower-case words, every entry point
    renamed in statements), patched in; ``after``: the package's."""
    saved = dc.words, dc.code_tokens
    if name == "before":
        dc.words, dc.code_tokens = _legacy_words, _legacy_code_tokens  # type: ignore[assignment]
    try:
        yield
    finally:
        dc.words, dc.code_tokens = saved  # type: ignore[assignment]


def load_sets(data_dir: Path) -> tuple[list[Problem], dict[str, list[Problem]]]:
    mbpp = load_benchmark("mbpp", data_dir / "mbpp" / "mbpp.jsonl")
    test = load_benchmark("mbpp", data_dir / "mbpp" / "mbpp.jsonl", split="test")
    test_ids = {p.task_id for p in test}
    he = load_benchmark("humaneval", data_dir / "humaneval" / "HumanEval.jsonl.gz")
    return [p for p in mbpp if p.task_id not in test_ids], {"humaneval": he, "mbpp:test": test}


def all_matches(train: list[Problem], against: dict[str, list[Problem]]) -> dict[tuple[str, int, int], Any]:
    out = {}
    for norm, n, m in itertools.product(("before", "after"), NGRAMS, MIN_NGRAMS):
        with normalisation(norm):
            settings = DecontaminationSettings(ngram=n, min_ngrams=m)
            out[(norm, n, m)] = candidate_matches(train, against, settings)
    return out


def label_pairs(pairs: list[tuple[str, str]], by_id: dict[str, Problem],
                workers: int) -> list[dict[str, Any]]:
    """Each pair with its label: each reference, bound to the other's entry point, graded on the other's
    tests; ``HAND`` overrides the rule where a hand check found its tests too weak."""
    items = []
    for a, b in pairs:
        for src, dst in ((by_id[a], by_id[b]), (by_id[b], by_id[a])):
            program = f"{src.solutions[0]}\n\n{dst.entry_point} = {src.entry_point}\n"
            items.append((dst, program))
    with Grader(SandboxConfig(workers=workers)) as grader:
        results = grader.grade_many(items, progress=True)
    rows = []
    for i, (a, b) in enumerate(pairs):
        a_on_b, b_on_a = results[2 * i].passed, results[2 * i + 1].passed
        same, note = HAND.get((a, b), (a_on_b and b_on_a, None))
        row = {"train": a, "benchmark": b, "same_task": same,
               "mirror": not same and is_mirror(by_id[a], by_id[b]),
               "train_passes_benchmark_tests": a_on_b, "benchmark_passes_train_tests": b_on_a}
        rows.append(row | ({"hand": note} if note else {}))
    return rows


def is_mirror(a: Problem, b: Problem) -> bool:
    """The statements differ by one replaced run of at most two words (a sibling with another answer)."""
    x, y = (re.findall(r"[a-z0-9]+", dc.statement(p).lower()) for p in (a, b))
    x, y = [w for w in x if w != "python"], [w for w in y if w != "python"]
    ops = [op for op in difflib.SequenceMatcher(a=x, b=y, autojunk=False).get_opcodes() if op[0] != "equal"]
    return len(ops) == 1 and ops[0][0] == "replace" and max(ops[0][2] - ops[0][1], ops[0][4] - ops[0][3]) <= 2


def dropped(matches: dict[str, list[dc.Contamination]], statement: float, solution: float) -> dict[str, str]:
    limits = {"statement": statement, "solution": solution, "tests": solution}
    out = {}
    for task_id, found in matches.items():
        hit = next((c for c in found if c.overlap >= limits[c.field]), None)
        if hit is not None:
            out[task_id] = hit.drop_kind
    return out


def score(drops: dict[str, str], positive: set[str]) -> dict[str, Any]:
    tp = len(positive & drops.keys())
    return {"dropped": len(drops), "true_positives": tp,
            "precision": round(tp / len(drops), 4) if drops else None,
            "recall": round(tp / len(positive), 4) if positive else None,
            "by_kind": dict(sorted(Counter(drops.values()).items()))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--labels", type=Path, default=None, help="Reuse a labelled set instead of grading.")
    parser.add_argument("--min-overlap", type=float, default=0.3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    with LoadMonitor() as load:
        train, against = load_sets(args.data_dir)
        by_id = {p.task_id: p for p in [*train, *itertools.chain(*against.values())]}
        matches = all_matches(train, against)
        if args.labels is not None:
            rows = json.loads(args.labels.read_text())["pairs"]
        else:
            pairs = sorted({(t, c.matched) for found in matches.values() for t, cs in found.items()
                            for c in cs if c.overlap >= args.min_overlap})
            rows = label_pairs(pairs, by_id, args.workers)
            LABELS.write_text(json.dumps({"rule": __doc__.split("The labelling rule")[1].split("\n\n")[0],
                                          "pairs": rows}, indent=1) + "\n")
        positives = {"keep": {r["train"] for r in rows if r["same_task"]},
                     "drop": {r["train"] for r in rows if r["same_task"] or r["mirror"]}}
        sweep = []
        for (norm, n, m), found in matches.items():
            for st, so in itertools.product(STATEMENT, SOLUTION):
                drops = dropped(found, st, so)
                sweep.append({"normalisation": norm, "ngram": n, "min_ngrams": m, "statement_overlap": st,
                              "solution_overlap": so,
                              **{f"mirrors_{policy}": score(drops, positive)
                                 for policy, positive in positives.items()}})
    figures: dict[str, Any] = {
        "train_problems": len(train), "against": {k: len(v) for k, v in against.items()},
        "labelled_pairs": len(rows), "same_task_pairs": sum(r["same_task"] for r in rows),
        "mirror_pairs": sum(r["mirror"] for r in rows), "hand_overrides": len(HAND),
        "labelled_train_problems": len({r["train"] for r in rows}),
        "contaminated_problems": {policy: len(positive) for policy, positive in positives.items()},
        "before_fix_at_old_thresholds": _row(sweep, "before", 5, 6, 0.5, 0.7),
        "after_fix_at_old_thresholds": _row(sweep, "after", 5, 6, 0.5, 0.7),
    }
    for policy in positives:
        key = f"mirrors_{policy}"
        shipped = DecontaminationSettings.for_mirror_tasks(policy)  # type: ignore[arg-type]
        figures[f"best_f1_{key}"] = max((r for r in sweep if r["normalisation"] == "after"),
                                        key=lambda r, k=key: (_f1(r[k]), r[k]["precision"] or 0))
        figures[f"shipped_{key}"] = _row(sweep, "after", shipped.ngram, shipped.min_ngrams,
                                         shipped.statement_overlap, shipped.solution_overlap)
    print(json.dumps(figures, indent=1))
    write_result(args.out, figures | {"sweep": sweep}, load)


def _row(sweep: list[dict[str, Any]], *key: object) -> dict[str, Any]:
    names = ("normalisation", "ngram", "min_ngrams", "statement_overlap", "solution_overlap")
    return next(r for r in sweep if tuple(r[n] for n in names) == key)


def _f1(r: dict[str, Any]) -> float:
    p, q = r["precision"] or 0.0, r["recall"] or 0.0
    return 2 * p * q / (p + q) if p + q else 0.0


if __name__ == "__main__":
    main()
