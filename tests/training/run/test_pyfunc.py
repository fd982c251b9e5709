"""A registered Generator keeps loading with ``mlflow.pyfunc.load_model`` when internal modules move: a new
version stores code that names the class by its public path, and versions pickled at the class's earlier
paths load through those paths. Each model is registered in a real SQLite store and loaded back from it."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from pathlib import Path

import mlflow
import mlflow.pyfunc
import pytest
import yaml

import coding_framework.training
from coding_framework.config.training import TrackingConfig
from coding_framework.models.registry import HF_ARTIFACT
from coding_framework.testing.models import tiny_model_dir
from coding_framework.training.run.pyfunc import LOADER, GeneratorModel, pip_requirements
from coding_framework.training.run.tracking import MLflowTracker

pytestmark = pytest.mark.slow
TASK = "Write a function add(a, b) that returns a + b."
PICKLED_AT = ("coding_framework.training.pyfunc", "coding_framework.training.run.pyfunc")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_model_dir(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setenv("MLFLOW_REGISTRY_URI", uri)
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    yield uri
    mlflow.set_tracking_uri(None)
    mlflow.set_registry_uri(None)


def _register(uri: str, run_dir: Path, model_dir: Path, name: str) -> None:
    """Register ``model_dir`` as ``name`` the way a training run does."""
    run_dir.mkdir()
    tracker = MLflowTracker(TrackingConfig(mlflow_uri=uri), run_dir, system_metrics_interval_s=None)
    tracker.log_model(model_dir, name)
    tracker.finish()


def _register_pickled(model_dir: Path, name: str) -> None:
    """Register ``model_dir`` as ``name`` the way the trainer did before it stored code: a pickled
    ``GeneratorModel``, which names the module the class is defined in."""
    with mlflow.start_run():
        mlflow.pyfunc.log_model(name="model", python_model=GeneratorModel(),
                                artifacts={HF_ARTIFACT: str(model_dir)}, registered_model_name=name,
                                pip_requirements=pip_requirements())


def _answers(name: str) -> list[str]:
    return mlflow.pyfunc.load_model(f"models:/{name}/1").predict([TASK])


def _stored(name: str) -> Path:
    return Path(mlflow.artifacts.download_artifacts(f"models:/{name}/1"))


def test_a_version_stores_code_that_names_the_class_by_its_public_path(store, tmp_path, model_dir) -> None:
    _register(store, tmp_path / "run", model_dir, "generator")
    stored = _stored("generator")
    flavor = yaml.safe_load((stored / "MLmodel").read_text())["flavors"]["python_function"]
    assert "python_model" not in flavor and not (stored / "python_model.pkl").exists()
    assert (stored / flavor["artifacts"][HF_ARTIFACT]["path"] / "config.json").is_file()  # what loaders fetch
    assert (stored / Path(flavor["model_code_path"]).name).read_text() == LOADER
    assert "from coding_framework.training import GeneratorModel" in LOADER
    assert coding_framework.training.GeneratorModel is GeneratorModel
    [answer] = _answers("generator")
    assert isinstance(answer, str)


def test_a_version_loads_after_the_class_moves_and_a_pickled_one_does_not(
    store, tmp_path, model_dir, monkeypatch: pytest.MonkeyPatch
) -> None:
    _register(store, tmp_path / "run", model_dir, "as-code")
    _register_pickled(model_dir, "as-pickle")
    # The move: the class now lives in another module, and its old module is gone.
    moved = types.ModuleType("coding_framework.training.moved")
    moved.GeneratorModel = GeneratorModel  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, moved.__name__, moved)
    monkeypatch.setitem(sys.modules, "coding_framework.training.run.pyfunc", None)
    monkeypatch.setitem(coding_framework.training._LAZY, "GeneratorModel", "moved")

    [answer] = _answers("as-code")
    assert isinstance(answer, str)
    with pytest.raises(ModuleNotFoundError, match=r"coding_framework\.training\.run\.pyfunc"):
        _answers("as-pickle")


@pytest.mark.parametrize("path", PICKLED_AT)
def test_a_version_pickled_at_an_earlier_path_still_loads(
    store, model_dir, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    """``coding_framework.training.pyfunc`` is where the class was defined before ``training/run/`` existed,
    ``coding_framework.training.run.pyfunc`` where it was until versions stored code."""
    __import__(path)  # cloudpickle names a class by reference only when its module is imported
    with monkeypatch.context() as patch:
        patch.setattr(GeneratorModel, "__module__", path)
        _register_pickled(model_dir, "old")
    pickled = (_stored("old") / "python_model.pkl").read_bytes()
    assert path.encode() in pickled and pickled.count(b"coding_framework.training") == 1
    # Loading imports the old path afresh, as a new process would (the originals come back after the test).
    parent, _, child = path.rpartition(".")
    monkeypatch.delitem(sys.modules, path)
    monkeypatch.delattr(sys.modules[parent], child)

    [answer] = _answers("old")
    assert isinstance(answer, str)
