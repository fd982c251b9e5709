"""The embedded-model bootstrap: cache location and key, atomic build, reuse, loadable outputs, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import yaml
from transformers import AutoModelForCausalLM, AutoTokenizer
from typer.testing import CliRunner

from coding_framework.config.embedded import EmbeddedModelConfig
from coding_framework.config.llm import LLMConfig
from coding_framework.embedded import bootstrap, cache_root, ensure_embedded_model
from coding_framework.llm.base import SamplingParams
from coding_framework.llm.factory import build_engine
from coding_framework.llm.local import LocalEngine
from coding_framework.models import resolve_model

TINY = {
    "seed": 3,
    "tokenizer": {"vocab_size": 600, "corpus_mb": 0.2, "problem_text_repeats": 1},
    "architecture": {
        "hidden_size": 64,
        "num_heads": 2,
        "num_kv_heads": 2,
        "num_layers": 2,
        "intermediate_size": 128,
        "max_positions": 2048,
    },
    "data": {"synthetic_per_family": 4, "habit_share": 0.5, "revision_share": 0.05},
    "pretrain": {"steps": 2, "batch_size": 2, "seq_len": 64, "warmup_steps": 1},
    "sft": {"steps": 2, "batch_size": 2, "warmup_steps": 1, "max_seq_len": 2048},
}


def test_default_architecture_suits_vllm() -> None:
    arch = EmbeddedModelConfig().architecture
    assert arch.head_dim >= 32


def test_cache_root_env_override(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("CODING_FRAMEWORK_CACHE", str(tmp_path / "c"))
    assert cache_root() == tmp_path / "c"
    monkeypatch.delenv("CODING_FRAMEWORK_CACHE")
    assert "coding-framework" in str(cache_root())


def test_key_follows_config_and_data() -> None:
    base = EmbeddedModelConfig.model_validate(TINY)
    problems = bootstrap.training_problems(base)
    other = base.model_copy(update={"seed": 4})
    assert bootstrap.model_key(base, problems) == bootstrap.model_key(base, list(problems))
    assert bootstrap.model_key(base, problems) != bootstrap.model_key(other, problems)
    assert bootstrap.model_key(base, problems) != bootstrap.model_key(base, problems[1:])


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path]:
    cache = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CODING_FRAMEWORK_CACHE", str(cache))
        path = ensure_embedded_model(EmbeddedModelConfig.model_validate(TINY), progress=False)
    return cache, path


@pytest.mark.slow
def test_build_writes_a_standard_model_dir(built) -> None:
    cache, path = built
    assert path.parent == cache / "models"
    names = {p.name for p in path.iterdir()}
    assert {
        "config.json",
        "model.safetensors",
        "generation_config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "bootstrap.json",
    } <= names
    assert [p.name for p in path.parent.iterdir() if p.is_dir()] == [path.name]  # no temp dir left
    model = AutoModelForCausalLM.from_pretrained(path)
    tokenizer = AutoTokenizer.from_pretrained(path)
    assert model.config.model_type == "qwen2" and model.config.vocab_size == len(tokenizer)
    assert tokenizer.chat_template is not None
    report = json.loads((path / "bootstrap.json").read_text())
    assert report["sft"]["steps"] == 2 and report["pretrain"]["steps"] == 2
    assert report["examples"]["revision"] > 0
    generation = report["examples"]["total"] - report["examples"]["revision"] - report["examples"]["habit"]
    assert abs(report["examples"]["habit"] - generation) <= 1  # habit_share 0.5 of the first drafts


@pytest.mark.slow
def test_second_call_loads_from_cache(built, monkeypatch) -> None:
    cache, path = built
    monkeypatch.setenv("CODING_FRAMEWORK_CACHE", str(cache))

    def no_build(*args, **kwargs):
        raise AssertionError("rebuilt a cached model")

    monkeypatch.setattr(bootstrap, "build_embedded_model", no_build)
    assert ensure_embedded_model(EmbeddedModelConfig.model_validate(TINY)) == path


@pytest.mark.slow
def test_embedded_spec_builds_an_engine(built, monkeypatch) -> None:
    cache, _ = built
    monkeypatch.setenv("CODING_FRAMEWORK_CACHE", str(cache))
    tiny = EmbeddedModelConfig.model_validate(TINY)
    engine = build_engine(LLMConfig(model="embedded", device="cpu", embedded=tiny))
    assert isinstance(engine, LocalEngine)
    gen = engine.generate([1, 5, 6], SamplingParams(max_new_tokens=3, temperature=0.0))
    # The engine names the model as every command does: its version id, built from the weights' checksum.
    assert len(gen.token_ids) <= 3 and engine.policy_version == resolve_model("embedded", embedded=tiny).id


@pytest.mark.slow
def test_cli_bootstrap_model(built, tmp_path, monkeypatch) -> None:
    from coding_framework.cli.main import app

    cache, path = built
    monkeypatch.setenv("CODING_FRAMEWORK_CACHE", str(cache))
    config = tmp_path / "model.yaml"
    config.write_text(yaml.safe_dump(TINY))
    result = CliRunner().invoke(app, ["bootstrap-model", "--config", str(config)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output.strip().splitlines()[-1])["path"] == str(path)
    bad = tmp_path / "bad.yaml"
    bad.write_text("architecture:\n  hidden_size: 64\n  num_heads: 4\n")
    result = CliRunner().invoke(app, ["bootstrap-model", "--config", str(bad)])
    assert result.exit_code == 2 and "head_dim" in result.output


@pytest.mark.slow
def test_build_is_deterministic(built, tmp_path) -> None:
    from safetensors.torch import load_file

    _, path = built
    config = EmbeddedModelConfig.model_validate(TINY)
    bootstrap.build_embedded_model(config, bootstrap.training_problems(config), tmp_path, progress=False)
    first, again = load_file(path / "model.safetensors"), load_file(tmp_path / "model.safetensors")
    assert first.keys() == again.keys()
    assert all(torch.equal(first[k], again[k]) for k in first)
    assert (path / "tokenizer.json").read_text() == (tmp_path / "tokenizer.json").read_text()
