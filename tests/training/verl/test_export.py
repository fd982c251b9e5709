"""`verl-export` on a checkpoint written by verl's own FSDP checkpoint code (two gloo ranks on CPU, see
``_fsdp_checkpoint``): the merged Hugging Face model holds the trained weights (rounded to bfloat16, as
verl's merger writes them) and gives their logits, and MLflow registers it as our pyfunc with the
``challenger`` alias, loadable like a model of our own trainer."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from typer.testing import CliRunner

from coding_framework.cli.main import app
from coding_framework.embedded import ensure_embedded_model

pytestmark = pytest.mark.slow  # two ranks import verl and train one step: ~30 s of CPU

HELPER = Path(__file__).with_name("_fsdp_checkpoint.py")


def _free_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("verl_ckpt")
    subprocess.run([sys.executable, str(HELPER), str(ensure_embedded_model(progress=False)), str(out),
                    _free_port()], check=True, capture_output=True, timeout=600)
    return out


def export(*args: str) -> tuple[int, dict[str, Any], str]:
    result = CliRunner().invoke(app, ["verl-export", *args])
    lines = result.stdout.strip().splitlines()
    return result.exit_code, (json.loads(lines[-1]) if result.exit_code == 0 else {}), result.stderr


def test_the_merged_model_reproduces_the_trained_weights_and_logits(checkpoint: Path, tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM

    from tests.training.verl._fsdp_checkpoint import PROBE

    shards = sorted(p.name for p in (checkpoint / "global_step_1" / "actor").glob("model_world_size_*"))
    assert shards == ["model_world_size_2_rank_0.pt", "model_world_size_2_rank_1.pt"]
    step = checkpoint / "global_step_1"
    code, result, err = export("--checkpoint", str(step), "--out", str(tmp_path / "hf"))
    assert code == 0, err
    assert result["global_step"] == 1 and "mlflow_run_id" not in result
    reference = torch.load(checkpoint / "reference.pt")
    trained = reference["state_dict"]
    merged = AutoModelForCausalLM.from_pretrained(result["hf_dir"], dtype=torch.float32)
    weights = merged.state_dict()
    assert set(weights) == set(trained)  # the tied lm_head comes back from the embedding
    for name, value in trained.items():
        assert torch.equal(weights[name], value.bfloat16().float()), name
    base = AutoModelForCausalLM.from_pretrained(ensure_embedded_model(progress=False), dtype=torch.float32)
    moved = max((trained[k] - v).abs().max().item() for k, v in base.state_dict().items())
    assert moved > 1e-3  # the step changed the weights, so the export is the trained model, not the base
    base.load_state_dict({k: v.bfloat16().float() for k, v in trained.items()})
    probe = torch.tensor(PROBE)
    with torch.no_grad():
        assert torch.equal(merged(input_ids=probe).logits, base(input_ids=probe).logits)
        drift = (merged(input_ids=probe).logits - reference["logits"]).abs().max().item()
    assert drift < 0.5  # bfloat16 rounding of the weights, against the sharded fp32 model's own logits


def test_export_registers_the_model_as_the_challenger(checkpoint: Path, tmp_path: Path) -> None:
    import mlflow
    from mlflow.tracking import MlflowClient

    (checkpoint / "latest_checkpointed_iteration.txt").write_text("1")  # as verl's trainer records it
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    code, result, err = export("--checkpoint", str(checkpoint), "--out", str(tmp_path / "export" / "hf"),
                               "--register", "verl-generator", "--mlflow-uri", uri)
    assert code == 0, err
    assert (result["registered_model"], result["alias"], result["registered_version"]) == (
        "verl-generator", "challenger", 1)
    client = MlflowClient(tracking_uri=uri, registry_uri=uri)
    assert client.get_model_version_by_alias("verl-generator", "challenger").run_id == result["mlflow_run_id"]
    # `models:/` downloads through the tracking store too, so both URIs name the run's store.
    previous = mlflow.get_tracking_uri(), mlflow.get_registry_uri()
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    try:
        model = mlflow.pyfunc.load_model("models:/verl-generator@challenger")
    finally:
        mlflow.set_tracking_uri(previous[0])
        mlflow.set_registry_uri(previous[1])
    (answer,) = model.predict(["Write a function add(a, b)."], params={"max_new_tokens": 4})
    assert isinstance(answer, str)


def test_a_folder_without_a_checkpoint_is_a_one_line_error(tmp_path: Path) -> None:
    argv = ["verl-export", "--checkpoint", str(tmp_path), "--out", str(tmp_path / "o")]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert result.stderr.count("error: ") == 1 and "fsdp_config.json" in result.stderr
