"""A command resolves its model once: the CLI's resolution is the one the engine or the server runs, so each
command hashes the model's weights once (counted on `weights_checksum`, with a tiny model directory)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import coding_framework.models.checksums as checksums
import coding_framework.serving.server as server_module
from coding_framework.cli.main import app
from coding_framework.config.serving import ServingConfig
from coding_framework.testing.models import tiny_model_dir


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_model_dir(tmp_path_factory.mktemp("one-resolution") / "tiny")


def _start_and_stop(config: ServingConfig, **keys: Any) -> None:
    """`run_server` without serving: the app's start-up (the champion deployed) and shutdown."""
    from coding_framework.serving.app import create_app

    served = create_app(config, **keys)

    async def lifespan() -> None:
        async with served.router.lifespan_context(served):
            pass

    asyncio.run(lifespan())


def _commands(model: Path, tmp: Path) -> dict[str, list[str]]:
    spec = str(model)
    return {
        "solve": ["solve", "Write add(a, b) that returns a + b.", "--model", spec, "--max-rounds", "1",
                  "--reviewer", "none"],
        "evaluate": ["evaluate", "--benchmark", "humaneval", "--model", spec, "--limit", "1", "--max-rounds",
                     "1", "--results", str(tmp / "evaluate.jsonl")],
        "data rank": ["data", "rank", "--benchmark", "builtin", "--model", spec, "--limit", "1", "-n", "1",
                      "--out", str(tmp / "ranked.jsonl")],
        "serve": ["serve", "--model", spec, "--port", "0", "--state-dir", str(tmp / "state")],
    }  # fmt: skip


@pytest.mark.parametrize("command", ["solve", "evaluate", "data rank", "serve"])
def test_a_command_hashes_its_model_once(
    command: str, model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hashed: list[Path] = []
    weights_checksum = checksums.weights_checksum

    def counted(model_dir: str | Path) -> str:
        hashed.append(Path(model_dir))
        return weights_checksum(model_dir)

    monkeypatch.setattr(checksums, "weights_checksum", counted)
    monkeypatch.setattr(server_module, "run_server", _start_and_stop)
    done = CliRunner().invoke(app, _commands(model, tmp_path)[command], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    assert hashed == [model.resolve()]
