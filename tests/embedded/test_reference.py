"""The shipped reference build: its files match the manifest, and the default recipe installs it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from coding_framework.config import load_config, shipped_config
from coding_framework.config.embedded import EmbeddedModelConfig
from coding_framework.embedded import bootstrap, ensure_embedded_model
from coding_framework.embedded.reference import (
    REFERENCE_DIR,
    install_reference,
    manifest,
    recipe_key,
    reference_mismatches,
)


@pytest.fixture
def default() -> EmbeddedModelConfig:
    return load_config(EmbeddedModelConfig, shipped_config("embedded_model"))


@pytest.fixture
def no_build(monkeypatch) -> list[Path]:
    """Builds are recorded, and write a stand-in model instead of running the 10-minute recipe."""
    calls: list[Path] = []

    def fake_build(config, problems, out_dir, progress=True):
        calls.append(out_dir)
        (out_dir / bootstrap.REPORT_FILE).write_text("{}")

    monkeypatch.setattr(bootstrap, "build_embedded_model", fake_build)
    return calls


def test_shipped_files_match_their_manifest(default) -> None:
    shipped = manifest()
    assert shipped is not None and reference_mismatches() == []
    assert shipped["recipe_key"] == recipe_key(default, bootstrap.training_problems(default))
    assert json.loads((REFERENCE_DIR / "bootstrap.json").read_text())["config"] == default.model_dump(
        mode="json", exclude={"reference"}
    )


def test_default_recipe_installs_the_reference(default, no_build, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CODING_FRAMEWORK_CACHE", str(tmp_path))
    path = ensure_embedded_model(default, progress=False)
    assert no_build == [] and path.name == manifest()["name"]
    assert reference_mismatches(path) == []
    # An older cache under that name holding another machine's build is replaced by the reference.
    (path / "model.safetensors").write_bytes(b"another build")
    assert ensure_embedded_model(default, progress=False) == path and reference_mismatches(path) == []


def test_force_and_reference_false_build_here(default, no_build, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CODING_FRAMEWORK_CACHE", str(tmp_path))
    forced = ensure_embedded_model(default, force=True, progress=False)
    local = ensure_embedded_model(default.model_copy(update={"reference": False}), progress=False)
    assert forced == local and forced.name.endswith("-local") and len(no_build) == 1
    assert ensure_embedded_model(default, progress=False).name == manifest()["name"]


def test_a_damaged_reference_is_refused_in_one_line(tmp_path) -> None:
    shipped = tmp_path / "reference"
    shutil.copytree(REFERENCE_DIR, shipped)
    (shipped / "tokenizer.json").write_text("{}")
    with pytest.raises(ValueError, match=r"damaged \(tokenizer.json: sha256 .* != manifest") as err:
        install_reference(tmp_path / "dest", shipped)
    assert "\n" not in str(err.value)


def test_cli_installs_the_reference(tmp_path, monkeypatch, no_build) -> None:
    from typer.testing import CliRunner

    from coding_framework.cli.main import app

    monkeypatch.setenv("CODING_FRAMEWORK_CACHE", str(tmp_path))
    result = CliRunner().invoke(app, ["bootstrap-model"])
    assert result.exit_code == 0, result.output
    line = json.loads(result.output.strip().splitlines()[-1])
    assert line["reference"] is True and "equals_reference" not in line and no_build == []
