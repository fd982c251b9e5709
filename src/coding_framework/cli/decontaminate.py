"""`coding-framework data decontaminate`: drop a file's problems that match a benchmark or hold a secret."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer

from coding_framework.cli.data import data_app
from coding_framework.cli.output import fail, print_result_line


@data_app.command()
def decontaminate(
    data: Annotated[Path, typer.Option(help="A JSONL (or .jsonl.gz) of problem records to clean.")],
    against: Annotated[
        list[str],
        typer.Option(help="A source to check against (repeatable): NAME, NAME:SPLIT or a .jsonl path."),
    ],
    out: Annotated[
        Path, typer.Option(help="Where to write the kept problems (JSONL); the report goes beside.")
    ],
    ngram: Annotated[
        int | None,
        typer.Option(min=2, help="n-gram length: statement words, solution tokens (default: the policy's)."),
    ] = None,
    mirror_tasks: Annotated[
        str,
        typer.Option(
            help="`keep` a mirror of a benchmark problem (even vs odd) as a different task, or `drop` it.",
        ),
    ] = "keep",
    statement_overlap: Annotated[
        float | None,
        typer.Option(
            min=0.01,
            max=1.0,
            help="Statement overlap that drops (default: the --mirror-tasks policy's).",
        ),
    ] = None,
    solution_overlap: Annotated[
        float | None,
        typer.Option(
            min=0.01,
            max=1.0,
            help="Solution overlap that drops (default: the --mirror-tasks policy's).",
        ),
    ] = None,
    behaviour: Annotated[
        bool,
        typer.Option(help="Also grade candidate pairs' references on each other's tests, both ways."),
    ] = True,
    cache: Annotated[
        Path | None,
        typer.Option(help="A JSON file of the behaviour check's grader verdicts, read and updated."),
    ] = None,
    workers: Annotated[
        int | None, typer.Option(min=1, help="Concurrent sandboxes (default: the sandbox config's).")
    ] = None,
    secrets: Annotated[
        bool, typer.Option(help="Also drop problems that hold secrets or credentials.")
    ] = True,
) -> None:
    """Drop the problems of DATA that are, or paraphrase, a problem of an --against source (exact match after
    normalisation, n-gram overlap of the statement, the reference solution or the tests, or behaviour: each
    reference passes the other's tests in the grader), or hold secrets. Writes the kept problems to OUT and
    a report beside it (`OUT.report.json`: every drop, its kind and what it matched); the last stdout line
    is {"kept": n, "dropped": m}."""
    from coding_framework.cli.common import sandbox_settings
    from coding_framework.evaluation.decontamination import BehaviourCache
    from coding_framework.evaluation.decontamination import decontaminate as find_contamination
    from coding_framework.grading import Grader
    from coding_framework.problems import ProblemLoadError, load_problem_records, write_problem_records
    from coding_framework.problems.decontaminate import DecontaminationSettings, drops_by_kind
    from coding_framework.problems.secret_scan import find_secrets
    from coding_framework.problems.sources import load_source, parse_source
    from coding_framework.sandbox import BackendUnavailable

    started = time.perf_counter()
    try:
        problems = load_problem_records(data)
        sets = {parse_source(s).label: load_source(s) for s in against}
    except ProblemLoadError as exc:
        fail(str(exc))
    if mirror_tasks not in ("keep", "drop"):
        fail(f"--mirror-tasks {mirror_tasks!r}: choose keep or drop")
    settings = DecontaminationSettings.for_mirror_tasks(
        mirror_tasks, ngram=ngram, statement_overlap=statement_overlap,  # type: ignore[arg-type]
        solution_overlap=solution_overlap)
    try:
        verdicts = BehaviourCache(cache)
    except ValueError as exc:
        fail(f"--cache: {exc}")
    try:
        if behaviour:
            with Grader(sandbox_settings(None, workers=workers)) as grader:
                hits = find_contamination(problems, sets, settings, grader, verdicts)
        else:
            hits = find_contamination(problems, sets, settings)
    except BackendUnavailable as exc:
        fail(f"{exc}; --no-behaviour runs the text check alone")
    found = find_secrets([p for p in problems if p.task_id not in hits]) if secrets else {}
    dropped = [{"task_id": t, "reason": "contaminated", "kind": c.drop_kind, "match": c.as_dict()}
               for t, c in hits.items()]
    dropped += [{"task_id": t, "reason": "secret", "kind": "secret", "match": {"kinds": kinds}}
                for t, kinds in found.items()]
    gone = {row["task_id"] for row in dropped}
    kept = [p for p in problems if p.task_id not in gone]
    if out.is_dir():
        fail(f"--out {out} is a folder; pass a file path such as {out / 'clean.jsonl'}")
    write_problem_records(kept, out)
    report = out.with_name(out.name.removesuffix(".gz").removesuffix(".jsonl") + ".report.json")
    report.write_text(json.dumps({
        "data": str(data), "against": {k: len(v) for k, v in sets.items()}, "kept": len(kept),
        "dropped": dropped, "dropped_by_kind": drops_by_kind(dropped),
        "seconds": round(time.perf_counter() - started, 3),
        "settings": settings.__dict__ | {"behaviour": behaviour},
    }, indent=2) + "\n")
    typer.echo(f"kept {len(kept)} of {len(problems)} problems -> {out} (report: {report})", err=True)
    print_result_line({"kept": len(kept), "dropped": len(dropped)})
