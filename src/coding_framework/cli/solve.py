"""`coding-framework solve`: run the Generator / Executor / Reviewer workflow on one problem."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from coding_framework.cli.app import app
from coding_framework.cli.common import MODEL_HELP, model_flag, resolved_or_fail, workflow_config
from coding_framework.cli.output import fail, print_result_line

if TYPE_CHECKING:
    from coding_framework.problems import Problem


def read_problem(path: Path) -> Problem | str:
    """A Problem from a JSON/YAML mapping, else the file's text as a free-text problem."""
    import yaml
    from pydantic import ValidationError

    from coding_framework.problems import Problem

    if not path.is_file():
        raise ValueError(f"problem file not found: {path}")
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        if path.suffix in (".json", ".yaml", ".yml"):
            raise ValueError(f"{path} is not valid {path.suffix[1:].upper()}: {exc}") from None
        data = None
    if not isinstance(data, dict):
        if path.suffix in (".json", ".yaml", ".yml"):
            raise ValueError(
                f"{path} must hold a problem mapping (task_id, prompt, entry_point, test_code, ...)"
            )
        return text
    try:
        return Problem.model_validate(data)
    except ValidationError as exc:
        fields = "; ".join(f"{'.'.join(map(str, e['loc'])) or '<root>'}: {e['msg']}" for e in exc.errors())
        raise ValueError(f"{path} is not a valid problem: {fields}") from None


def _print_human(result: Any) -> None:
    from rich.console import Console
    from rich.syntax import Syntax

    console = Console()
    for i, feedback in enumerate(result.feedback, start=1):
        console.rule(f"round {i}")
        console.print(feedback, markup=False, highlight=False)
    console.rule("final code")
    console.print(Syntax(result.code or "# (no code)", "python"))
    verdict = (
        "PASSED"
        if result.passed
        else ("NOT TESTED (no tests)" if result.stop_reason == "untested" else "FAILED")
    )
    console.print(
        f"verdict: {verdict}  rounds: {result.rounds}  stop: {result.stop_reason}  "
        f"tokens: {result.tokens_used}",
        markup=False,
        highlight=False,
    )


@app.command()
def solve(
    problem: Annotated[
        str | None, typer.Argument(help="The problem, as free text (it has no tests, so it never passes).")
    ] = None,
    problem_file: Annotated[
        Path | None, typer.Option(help="A JSON/YAML Problem (with tests) or a plain-text statement.")
    ] = None,
    model: Annotated[
        str | None, typer.Option(help=f"{MODEL_HELP} Every LLM role uses it (default: the agents config's).")
    ] = None,
    seed: Annotated[
        int | None, typer.Option(help="Seed the episode's sampling: the same model, config and seed write "
                                 "the same code (default: the agents config's seeds).")
    ] = None,
    reviewer: Annotated[str | None, typer.Option(help="Reviewer backend: static | llm | none.")] = None,
    max_rounds: Annotated[int | None, typer.Option(min=1, help="Most drafts before giving up.")] = None,
    agents_config: Annotated[
        str | None, typer.Option(help="Agents YAML: a path or a shipped name (default: shipped agents).")
    ] = None,
    graph_config: Annotated[
        str | None, typer.Option(help="Graph YAML: a path or a shipped name (default: shipped graph).")
    ] = None,
    sandbox_config: Annotated[
        str | None, typer.Option(help="Sandbox YAML: a path or a shipped name (default: shipped sandbox).")
    ] = None,
    checkpoint_db: Annotated[
        Path | None, typer.Option(help="SQLite file to checkpoint the run in (resumable).")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object as the last stdout line.")
    ] = False,
) -> None:
    """Write code for PROBLEM with the generate -> execute -> review -> revise workflow."""
    from coding_framework.config import ConfigError
    from coding_framework.llm.base import EngineError
    from coding_framework.sandbox import BackendUnavailable
    from coding_framework.supervisor import CodingSupervisor

    if (problem is None) == (problem_file is None):
        fail('give the problem as text ("...") or with --problem-file FILE, not both')
    ref = model_flag(model) if model is not None else None
    resolved = resolved_or_fail(ref) if ref is not None and not ref.is_endpoint else None
    try:
        task = read_problem(problem_file) if problem_file is not None else problem or ""
        if isinstance(task, str) and not task.strip():
            fail("the problem text is empty")
        config = workflow_config(
            agents_config,
            graph_config,
            sandbox_config,
            model=ref,
            reviewer=reviewer,
            max_rounds=max_rounds,
            checkpoint_db=checkpoint_db,
        )
        with CodingSupervisor(config, resolved=[resolved] if resolved else ()) as supervisor:
            result = supervisor.solve(task, seed=seed)
    except (ConfigError, EngineError, BackendUnavailable, ValueError) as exc:
        fail(str(exc))
    if as_json:
        print_result_line(result.model_dump(exclude={"history"}))
    else:
        _print_human(result)
