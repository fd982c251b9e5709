"""Versions: weight checksums, every spec form, and the MLflow registry with its weights attestation."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from coding_framework.config.serving import ServingConfig
from coding_framework.config.training import TrackingConfig
from coding_framework.embedded import ensure_embedded_model
from coding_framework.llm.weights import weights_checksum
from coding_framework.serving.versions import resolve_version
from coding_framework.training.tracking import MLflowTracker
from tests.serving.upstream import MockUpstream


@pytest.fixture(scope="module")
def model_copy(tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("models") / "my-model"
    shutil.copytree(ensure_embedded_model(), dest)
    return dest


def test_checksum_names_the_weights(model_copy: Path, tmp_path: Path) -> None:
    assert weights_checksum(model_copy) == weights_checksum(ensure_embedded_model())
    changed = tmp_path / "changed"
    shutil.copytree(model_copy, changed)
    weights = next(changed.glob("*.safetensors"))
    weights.write_bytes(weights.read_bytes()[:-1] + b"\x01")
    assert weights_checksum(changed) != weights_checksum(model_copy)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no weight files"):
        weights_checksum(tmp_path / "empty")


def test_spec_forms(model_copy: Path) -> None:
    config = ServingConfig()
    embedded = resolve_version("embedded", config)
    by_dir = resolve_version(str(model_copy), config)
    assert embedded.id == f"embedded@{embedded.checksum[:12]}" and by_dir.name == "my-model"
    assert by_dir.checksum == embedded.checksum and by_dir.model_dir == model_copy.resolve()
    with MockUpstream(model="served") as up:
        listed = resolve_version(up.url, config)
        named = resolve_version(f"{up.url}@other", config)
    assert (listed.name, listed.base_url, named.served_model) == ("served", up.url, "other")
    for bad in ("/no/such/dir", "models:/", "models:/x/notanumber", "ftp://x"):
        with pytest.raises(ValueError):
            resolve_version(bad, config)


@pytest.mark.slow
def test_registry_versions_resolve_and_are_attested(model_copy: Path, tmp_path: Path) -> None:
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    tracker = MLflowTracker(TrackingConfig(mlflow_uri=uri), run_dir)
    tracker.log_model(model_copy, "gen")
    config = ServingConfig(mlflow_uri=uri, model_cache=tmp_path / "cache")
    by_alias = resolve_version("models:/gen@challenger", config)
    by_number = resolve_version("models:/gen/1", config)
    assert by_alias.id == by_number.id == f"gen/1@{weights_checksum(model_copy)[:12]}"
    assert by_alias.registry == ("gen", 1) and by_alias.tracking_uri == uri
    with pytest.raises(ValueError, match="has no models:/gen/7"):
        resolve_version("models:/gen/7", config)
    MlflowClient(uri, uri).set_model_version_tag("gen", "1", "weights_sha256", "0" * 64)
    with pytest.raises(ValueError, match="attestation failed"):
        resolve_version("models:/gen/1", config)
