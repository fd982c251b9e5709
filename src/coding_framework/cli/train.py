"""`coding-framework train`: RL-train the Generator through the multi-turn workflow graph."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from coding_framework.cli.app import app
from coding_framework.cli.common import MODEL_HELP, model_flag
from coding_framework.cli.output import fail, print_result_line
from coding_framework.config.algorithm import ALGORITHM_NAMES


@app.command()
def train(
    run_dir: Annotated[
        Path, typer.Option(help="Where checkpoints, MLflow store, report and final model go.")
    ],
    algorithm: Annotated[
        str | None, typer.Option(help=f"{' | '.join(ALGORITHM_NAMES)} (default: the config's).")
    ] = None,
    config: Annotated[
        str | None,
        typer.Option(
            help="Training YAML: a path or a shipped name, e.g. grpo_basic (default: TrainingConfig's "
            "defaults)."
        ),
    ] = None,
    resume: Annotated[
        bool, typer.Option(help="Continue from the newest valid checkpoint in --run-dir; with a larger "
                                "--steps, a run trains on as a longer run would (constant learning rate and "
                                "temperature).")
    ] = False,
    seed: Annotated[int | None, typer.Option(help="Override the config's seed.")] = None,
    steps: Annotated[int | None, typer.Option(min=1, help="Override the config's number of steps.")] = None,
    device: Annotated[
        str | None, typer.Option(help="auto | cpu | cuda: where the policy trains (default: the config's).")
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(help=f"The starting model (default: the config's); a trained model's adapters continue "
                     f"training. {MODEL_HELP}"),
    ] = None,
    train_data: Annotated[
        list[str] | None,
        typer.Option(help="A training source (repeatable): NAME, NAME:SPLIT or a .jsonl / .jsonl.gz of "
                     "problem records; replaces the config's data.train."),
    ] = None,
    heldout_data: Annotated[
        str | None, typer.Option(help="The held-out source (default: the config's data.heldout).")
    ] = None,
    eval_data: Annotated[
        list[str] | None,
        typer.Option("--eval", help="A benchmark evaluated before, during and after training (repeatable); "
                     "replaces the config's eval.benchmarks."),
    ] = None,
    engine: Annotated[
        str | None,
        typer.Option(help="local | vllm: what samples the rollouts (default: the config's rollout.engine); "
                     "vllm starts a server from .venv-vllm (or $CODING_FRAMEWORK_VLLM_VENV)."),
    ] = None,
    engine_url: Annotated[
        str | None,
        typer.Option(help="URL@MODEL (an endpoint model spec): attach to a running vLLM server instead of "
                     "starting one (implies --engine vllm)."),
    ] = None,
    max_staleness: Annotated[
        int | None,
        typer.Option(min=0, help="K: rollouts come from weights at most K versions old; 0 is synchronous "
                     "(default: the config's rollout.max_staleness)."),
    ] = None,
    off_policy_correction: Annotated[
        str | None,
        typer.Option(help="none | tis | mis (default: the config's algo.off_policy_correction)."),
    ] = None,
    warm_start_only: Annotated[
        bool,
        typer.Option(help="Run only the Generator's supervised warm start (the config's warm_start settings) "
                     "and keep its model in RUN_DIR/warm_start_model: the non-RL baseline."),
    ] = False,
    progress: Annotated[bool, typer.Option(help="Show the progress bar (stderr).")] = True,
) -> None:
    """Train with RL; the last stdout line is a JSON object with the final metrics, the data's sha256 and
    the regression gate's verdict (`challenger`: whether the final model got that alias)."""
    from coding_framework.config import ConfigError, load_config
    from coding_framework.config.training import TrainingConfig
    from coding_framework.llm.base import EngineError
    from coding_framework.sandbox import BackendUnavailable
    from coding_framework.training.generator_sft import WarmStartRejected
    from coding_framework.training.run.checkpoint import CheckpointError
    from coding_framework.training.trainer import WARM_START_MODEL, Trainer

    try:
        flags = {"algorithm": algorithm, "seed": seed, "steps": steps, "device": device,
                 "model": model_flag(model) if model is not None else None, "data.train": train_data or None,
                 "data.heldout": heldout_data, "eval.benchmarks": eval_data or None,
                 "rollout.engine": "vllm" if engine_url is not None and engine is None else engine,
                 "rollout.engine_url": engine_url, "rollout.max_staleness": max_staleness,
                 "algo.off_policy_correction": off_policy_correction}
        cfg = load_config(TrainingConfig, config, overrides=flags)
        trainer = Trainer(cfg, run_dir, resume=resume, progress=progress)
        if warm_start_only:
            metrics = trainer.warm_start_only()
            print_result_line({**metrics, "model": str(run_dir / WARM_START_MODEL)})
            return
        results = trainer.run()
    except WarmStartRejected as exc:
        fail(f"{exc}; its model is kept in {run_dir / WARM_START_MODEL}")
    except (ConfigError, CheckpointError, EngineError, BackendUnavailable, OSError, ValueError) as exc:
        fail(str(exc))
    print_result_line(results.summary())
