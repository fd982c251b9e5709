"""`coding-framework solve`: run the Generator / Executor / Reviewer workflow on one problem."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast, get_args

import typer

from coding_framework.cli.main import app
from coding_framework.cli.output import fail, print_result_line

if TYPE_CHECKING:
    from coding_framework.config.graph import WorkflowConfig
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


def workflow_config(
    agents: str | None = None,
    graph: str | None = None,
    sandbox: str | None = None,
    *,
    model: str | None = None,
    reviewer: str | None = None,
    max_rounds: int | None = None,
    checkpoint_db: Path | None = None,
) -> WorkflowConfig:
    """The workflow from three YAMLs (paths or shipped names; unset: the shipped `agents`, `graph` and
    `sandbox` configs), then the flags the user gave."""
    from coding_framework.config.agents import ReviewerBackend
    from coding_framework.config.graph import WorkflowConfig

    config = WorkflowConfig.load(agents, graph, sandbox)
    if model is not None:
        config.agents.model = model
        config.agents.generator.model = config.agents.reviewer.model = None
    if reviewer is not None:
        if reviewer not in get_args(ReviewerBackend):
            raise ValueError(f"--reviewer must be static, llm or none, not {reviewer!r}")
        config.agents.reviewer.backend = cast(ReviewerBackend, reviewer)
    if max_rounds is not None:
        config.graph.max_rounds = max_rounds
    if checkpoint_db is not None:
        config.graph.checkpoint_db = checkpoint_db
    return config


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
        str | None,
        typer.Option(
            help="Backend for every LLM role: embedded | local:/path | openai:http://host:port/v1@model "
            "(default: the agents config's)."
        ),
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
    try:
        task = read_problem(problem_file) if problem_file is not None else problem or ""
        if isinstance(task, str) and not task.strip():
            fail("the problem text is empty")
        config = workflow_config(
            agents_config,
            graph_config,
            sandbox_config,
            model=model,
            reviewer=reviewer,
            max_rounds=max_rounds,
            checkpoint_db=checkpoint_db,
        )
        with CodingSupervisor(config) as supervisor:
            result = supervisor.solve(task)
    except (ConfigError, EngineError, BackendUnavailable, ValueError) as exc:
        fail(str(exc))
    if as_json:
        print_result_line(result.model_dump(exclude={"history"}))
    else:
        _print_human(result)
