"""`coding-framework solve`: run the Generator / Executor / Reviewer workflow on one problem."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from coding_framework.cli.main import app
from coding_framework.cli.output import fail, print_result_line

_DEFAULT_AGENTS = Path("configs/agents.yaml")
_DEFAULT_GRAPH = Path("configs/graph.yaml")


def read_problem(path: Path) -> Any:
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
    agents: Path | None,
    graph: Path | None,
    sandbox: Path | None,
    model: str | None,
    reviewer: str | None,
    max_rounds: int | None,
    checkpoint_db: Path | None,
) -> Any:
    from coding_framework.config.graph import WorkflowConfig

    config = WorkflowConfig.load(
        agents or (_DEFAULT_AGENTS if _DEFAULT_AGENTS.is_file() else None),
        graph or (_DEFAULT_GRAPH if _DEFAULT_GRAPH.is_file() else None),
        sandbox,
    )
    if model is not None:
        config.agents.model = model
        config.agents.generator.model = config.agents.reviewer.model = None
    if reviewer is not None:
        if reviewer not in ("static", "llm", "none"):
            raise ValueError(f"--reviewer must be static, llm or none, not {reviewer!r}")
        config.agents.reviewer.backend = reviewer
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
            "(default: configs/agents.yaml)."
        ),
    ] = None,
    reviewer: Annotated[str | None, typer.Option(help="Reviewer backend: static | llm | none.")] = None,
    max_rounds: Annotated[int | None, typer.Option(min=1, help="Most drafts before giving up.")] = None,
    agents_config: Annotated[
        Path | None, typer.Option(help="Agents YAML (default: configs/agents.yaml if present).")
    ] = None,
    graph_config: Annotated[
        Path | None, typer.Option(help="Graph YAML (default: configs/graph.yaml if present).")
    ] = None,
    sandbox_config: Annotated[
        Path | None, typer.Option(help="Sandbox YAML (default: built-in defaults).")
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
        task = read_problem(problem_file) if problem_file is not None else problem
        if isinstance(task, str) and not task.strip():
            fail("the problem text is empty")
        config = workflow_config(
            agents_config, graph_config, sandbox_config, model, reviewer, max_rounds, checkpoint_db
        )
        with CodingSupervisor(config) as supervisor:
            result = supervisor.solve(task)
    except (ConfigError, EngineError, BackendUnavailable, ValueError) as exc:
        fail(str(exc))
    if as_json:
        print_result_line(result.model_dump(exclude={"history"}))
    else:
        _print_human(result)
