"""Serve a model directory with vLLM on CPU from .venv-vllm, until Ctrl-C.

    bash scripts/setup_vllm.sh                                  # once
    python scripts/serve_vllm.py                                # the embedded model, on a free port
    python scripts/serve_vllm.py path/to/model-dir --port 8000 --name coder

Prints the LLM spec to pass to the CLI (`--model openai:http://127.0.0.1:8000/v1@coder`).
Run it with the project's venv (.venv/bin/python); vLLM itself runs from .venv-vllm.
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Annotated

import typer

from coding_framework.llm.base import EngineError
from coding_framework.llm.vllm_server import VLLMServer, VLLMServerConfig

app = typer.Typer(add_completion=False)


@app.command()
def main(
    model: Annotated[str, typer.Argument(help="A Hugging Face model directory, or 'embedded'.")] = "embedded",
    port: Annotated[int, typer.Option(help="0 picks a free port.")] = 0,
    name: Annotated[str | None, typer.Option(help="Served model name; default: the directory name.")] = None,
    max_model_len: Annotated[int, typer.Option(help="Longest prompt + completion, in tokens.")] = 2048,
    max_num_seqs: Annotated[int, typer.Option(help="Sequences decoded together.")] = 8,
    venv: Annotated[Path, typer.Option(help="The venv scripts/setup_vllm.sh made.")] = Path(".venv-vllm"),
    log: Annotated[Path | None, typer.Option(help="Write the server's output here.")] = None,
) -> None:
    if model == "embedded":
        from coding_framework.embedded import ensure_embedded_model

        model_dir = ensure_embedded_model()
    else:
        model_dir = Path(model)
    config = VLLMServerConfig(
        venv=venv, port=port, served_model_name=name, max_model_len=max_model_len, max_num_seqs=max_num_seqs
    )
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # so the with-block stops vLLM on SIGTERM too
    try:
        with VLLMServer(model_dir, config, log_path=log) as server:
            typer.echo(f"vLLM ready in {server.startup_s:.0f} s at {server.url}")
            typer.echo(f"LLM spec: openai:{server.url}/v1@{server.name}")
            signal.pause()
    except KeyboardInterrupt:
        typer.echo("vLLM stopped")
    except EngineError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None


if __name__ == "__main__":
    app()
