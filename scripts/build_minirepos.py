"""Build the shipped mini-repository task set from the templates under repotasks/minirepos/.

    .venv/bin/python scripts/build_minirepos.py          # about a few minutes on 2 cores

For every template, every public function and every mutation of it (at most --max-per-function kept per
function), the mutated repository's visible and hidden tests run on this machine; a mutant the hidden
tests catch becomes a task, once the grader confirms it in the sandbox: the gold patch resolves it and the
unchanged repository passes none of its FAIL_TO_PASS tests. The tasks are then split into train,
validation and test (whole (template, function) groups per split, duplicates dropped) and written to
src/coding_framework/repotasks/data/minirepos.jsonl.gz with its manifest, minirepos_manifest.json.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from coding_framework.logs import configure_logging
from coding_framework.repotasks.generate import IssueFrom, build_candidates, load_template, split_tasks
from coding_framework.repotasks.minirepo import (
    DATA_FILE,
    SPLITS,
    TEMPLATES_DIR,
    manifest_path,
    write_minirepos,
)
from coding_framework.repotasks.task import RepoTask

Validate = Callable[[list[RepoTask]], list[RepoTask]]
HOST_CHECKS = (
    "each task's FAIL_TO_PASS fail and PASS_TO_PASS pass on the mutated snapshot, all hidden and visible "
    "tests pass on the template, and the gold and test patches restore the template (testrun on the host)"
)


def _difficulties(tasks: Sequence[RepoTask]) -> str:
    counts = Counter(t.difficulty for t in tasks)
    return ", ".join(f"{counts[d]} {d}" for d in ("easy", "medium", "hard"))


def build(
    templates_dir: Path = TEMPLATES_DIR,
    out: Path = DATA_FILE,
    max_per_function: int = 3,
    timeout_s: float = 10,
    sizes: tuple[int, int, int] = (200, 50, 50),
    workers: int | None = None,
    issue_from: IssueFrom = "farthest",
    validate: Validate | None = None,
) -> dict[str, list[RepoTask]]:
    """Build candidates from every template, keep those ``validate`` (if given) accepts, split and write."""
    started = time.monotonic()
    templates = sorted(p for p in templates_dir.iterdir() if (p / "hidden").is_dir())
    if not templates:
        sys.exit(f"{templates_dir}: no templates (directories with a hidden/ folder)")
    tasks: list[RepoTask] = []
    digests = {}
    for directory in templates:
        began = time.monotonic()
        template = load_template(directory)
        digests[template.name] = template.digest()
        found = build_candidates(template, max_per_function, timeout_s, workers, issue_from)
        print(
            f"{directory.name}: {len(found)} candidates ({_difficulties(found)}) "
            f"in {time.monotonic() - began:.0f} s",
            flush=True,
        )
        tasks += found
    checks = [HOST_CHECKS]
    if validate is not None:
        before = len(tasks)
        tasks = validate(tasks)
        checks.append(getattr(validate, "__name__", type(validate).__name__))
        print(f"validation kept {len(tasks)} of {before} candidates", flush=True)
    splits = split_tasks(tasks, sizes)
    manifest = write_minirepos(
        splits,
        out,
        build={
            "script": "scripts/build_minirepos.py",
            "template_sha256": digests,
            "candidates": len(tasks),
            "max_per_function": max_per_function,
            "timeout_s": timeout_s,
            "issue_from": issue_from,
            "sizes": list(sizes),
            "checks": checks,
            "python": platform.python_version(),
        },
    )
    for split in SPLITS:
        print(f"{split}: {len(splits[split])} tasks ({_difficulties(splits[split])})")
    print(f"bug kinds: {manifest['bug_kinds']}")
    print(f"wrote {out} and {manifest_path(out).name} in {time.monotonic() - started:.0f} s")
    return splits


def graded_in_the_sandbox(tasks: list[RepoTask]) -> list[RepoTask]:
    """Keep the tasks the grader confirms: the gold patch resolves the task and the unchanged repository
    does not (its FAIL_TO_PASS tests fail there), each graded by the hidden tests in the hardened tier."""
    from coding_framework.grading import Grader
    from coding_framework.grading.repository import grade_repositories

    with Grader() as grader:
        gold = grade_repositories(grader, [(t, t.fixed_files()) for t in tasks], progress="gold patches")
        noop = grade_repositories(grader, [(t, t.files) for t in tasks], progress="unchanged repositories")
    kept = []
    for task, fixed, unchanged in zip(tasks, gold, noop, strict=True):
        if fixed.resolved and not unchanged.resolved and unchanged.fail_to_pass[0] == 0:
            kept.append(task)
        else:
            print(f"{task.instance_id}: dropped (gold {fixed.as_dict()}, unchanged {unchanged.as_dict()})")
    return kept


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--templates", type=Path, default=TEMPLATES_DIR, help="the directory of templates")
    ap.add_argument("--out", type=Path, default=DATA_FILE, help="the data file to write (a .jsonl.gz)")
    ap.add_argument("--max-per-function", type=int, default=3, help="mutants kept per function at most")
    ap.add_argument("--timeout", type=float, default=10, help="seconds for one run of a repository's tests")
    ap.add_argument(
        "--sizes", type=int, nargs=3, default=(200, 50, 50), metavar=("TRAIN", "VALIDATION", "TEST")
    )
    ap.add_argument("--workers", type=int, default=None, help="test runs at once (default: up to 4)")
    ap.add_argument(
        "--issue-from",
        choices=("first", "farthest"),
        default="farthest",
        help="the failing test an issue describes: the one whose calls are farthest from the bug (the "
        "default: about half the tasks become medium or hard), or the first in file order",
    )
    ap.add_argument("--no-grader-check", action="store_true",
                    help="skip grading every task's gold patch and unchanged repository in the sandbox")
    args = ap.parse_args(argv)
    configure_logging("INFO")
    build(
        args.templates,
        args.out,
        args.max_per_function,
        args.timeout,
        tuple(args.sizes),
        args.workers,
        args.issue_from,
        None if args.no_grader_check else graded_in_the_sandbox,
    )


if __name__ == "__main__":
    main()
