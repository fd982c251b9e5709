"""Resolving a ModelRef: weight checksums, every spec form, the MLflow registry and its attestation."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from coding_framework.config.training import TrackingConfig
from coding_framework.embedded import ensure_embedded_model
from coding_framework.models import ModelError, ResolvedModel, resolve_model
from coding_framework.models.checksums import weights_checksum
from coding_framework.testing.upstream import MockUpstream
from coding_framework.training.run.tracking import MLflowTracker


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
    embedded = resolve_model("embedded")
    by_dir = resolve_model(str(model_copy))
    assert embedded.id == f"embedded@{embedded.checksum[:12]}" and by_dir.name == "my-model"
    assert by_dir.checksum == embedded.checksum and by_dir.model_dir == model_copy.resolve()
    with MockUpstream(model="served") as up:
        listed = resolve_model(up.url)
        named = resolve_model(f"{up.url}@other")
    assert (listed.name, listed.base_url, named.served_model) == ("served", up.url, "other")
    for bad in ("/no/such/dir", "models:/", "models:/x/notanumber", "ftp://x", str(model_copy.parent)):
        with pytest.raises(ModelError) as caught:
            resolve_model(bad)
        assert repr(bad) in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.slow
def test_registry_versions_resolve_and_are_attested(model_copy: Path, tmp_path: Path) -> None:
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    tracker = MLflowTracker(TrackingConfig(mlflow_uri=uri), run_dir)
    tracker.log_model(model_copy, "gen")

    def resolve(spec: str) -> ResolvedModel:
        return resolve_model(spec, registry_uri=uri, cache_dir=tmp_path / "cache")

    by_alias, by_number = resolve("models:/gen@challenger"), resolve("models:/gen/1")
    assert by_alias.id == by_number.id == f"gen/1@{weights_checksum(model_copy)[:12]}"
    assert by_alias.registry == ("gen", 1) and by_alias.tracking_uri == uri
    with pytest.raises(ModelError, match="has no models:/gen/7"):
        resolve("models:/gen/7")
    MlflowClient(uri, uri).set_model_version_tag("gen", "1", "weights_sha256", "0" * 64)
    with pytest.raises(ModelError, match="attestation failed"):
        resolve("models:/gen/1")
