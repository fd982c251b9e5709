"""What building and running a Trainer does to its surroundings: the device, a given engine, the global
state it restores, and what a resume tells the user about rejected checkpoints."""

from __future__ import annotations

import gc
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from transformers.utils import logging as transformers_logging

from coding_framework.config import ConfigError, load_config
from coding_framework.config.training import TrainingConfig
from coding_framework.embedded.architecture import init_model
from coding_framework.llm.local import LocalEngine
from coding_framework.testing.engine import ScriptedEngine, tiny_tokenizer
from coding_framework.testing.models import TINY
from coding_framework.testing.tiny_run import tiny_config
from coding_framework.training.run.checkpoint import CheckpointManager
from coding_framework.training.run.setup import check_run_dir, configure, resume_point, training_device
from coding_framework.training.trainer import Trainer

ONE_STEP: dict[str, Any] = {
    "steps": 1,
    "data": {"synthetic_per_family": 4, "families": ["add_constant"], "heldout_limit": 1},
    "rollout": {"problems_per_step": 1, "group_size": 2, "max_new_tokens": 4},
    "eval": {"max_new_tokens": 4, "baseline": False},
    "tracking": {"registered_model": None, "log_checkpoints": False},
    "audit": {"rows": 1},
}


def _config(tmp: Path, **overrides: Any) -> TrainingConfig:
    return load_config(TrainingConfig, tiny_config(tmp, **(ONE_STEP | overrides)))


def _global_state() -> dict[str, Any]:
    name, keys, pos, has_gauss, gauss = np.random.get_state()
    return {
        "python": random.getstate(),
        "numpy": (name, keys.tolist(), pos, has_gauss, gauss),
        "torch": torch.get_rng_state().tolist(),
        "threads": torch.get_num_threads(),
        "gc_frozen": gc.get_freeze_count(),
        "progress_bars": transformers_logging.is_progress_bar_enabled(),
    }


@pytest.fixture
def as_a_caller():
    """Makes the test a caller whose settings differ from every one a run sets (1 thread, seed 1, bars
    off, gc frozen) and returns them; call it after the last thing that seeds torch (a tiny model)."""
    threads = torch.get_num_threads()

    def settle() -> dict[str, Any]:
        torch.set_num_threads(3)
        random.seed(987)
        np.random.seed(654)
        torch.manual_seed(321)
        transformers_logging.enable_progress_bar()
        assert gc.get_freeze_count() == 0
        return _global_state()

    yield settle
    torch.set_num_threads(threads)


# -- device ------------------------------------------------------------------------------------------------


def test_auto_is_cuda_when_torch_sees_a_gpu_and_cuda_without_one_is_a_config_error(monkeypatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert training_device(TrainingConfig(device="auto")) == torch.device("cpu")
    assert training_device(TrainingConfig(device="cpu")) == torch.device("cpu")
    with pytest.raises(ConfigError, match="device: cuda, but torch sees no CUDA device; set device: auto"):
        training_device(TrainingConfig(device="cuda"))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert training_device(TrainingConfig(device="auto")) == torch.device("cuda")
    assert training_device(TrainingConfig(device="cpu")) == torch.device("cpu")


def test_cuda_without_cuda_fails_before_the_run_touches_anything(tmp_path, monkeypatch, as_a_caller) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    config = _config(tmp_path, device="cuda")
    before = as_a_caller()
    with pytest.raises(ConfigError, match="device: cuda"):
        Trainer(config, tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()
    assert _global_state() == before


def test_a_given_engine_is_the_one_trained(tmp_path) -> None:
    tokenizer = tiny_tokenizer()
    engine = LocalEngine(init_model(TINY, tokenizer, 0), tokenizer, device="cpu")
    config = _config(tmp_path, model=str(tmp_path / "no-such-model"), device="cpu")  # never loaded
    with Trainer(config, tmp_path / "run", engine=engine, progress=False) as trainer:
        assert trainer.engine is engine and trainer.model is engine.model and trainer.tokenizer is tokenizer
        assert trainer.updater.device == torch.device("cpu")
    with pytest.raises(ConfigError, match="device: cuda, but the engine passed to the trainer runs on cpu"):
        Trainer(config.model_copy(update={"device": "cuda"}), tmp_path / "run2", engine=engine)
    with pytest.raises(TypeError, match="pass a LocalEngine over one"):
        Trainer(config, tmp_path / "run3", engine=ScriptedEngine())  # type: ignore[arg-type]


def test_configure_replaces_fields_and_names_the_one_it_rejects() -> None:
    cfg = configure(TrainingConfig(), algorithm="ppo", episodes=130, seed=3, device="cpu")
    assert (cfg.algorithm, cfg.seed, cfg.device, cfg.steps) == ("ppo", 3, "cpu", 3)  # 64 episodes a step
    with pytest.raises(ConfigError, match=r"^algorithm: .*unknown algorithm 'a2c'; valid algorithms"):
        configure(TrainingConfig(), algorithm="a2c")


# -- global state ------------------------------------------------------------------------------------------


def test_building_a_trainer_sets_the_runs_global_state_and_close_restores_the_callers(
    tmp_path, as_a_caller
) -> None:
    config = _config(tmp_path)
    before = as_a_caller()
    trainer = Trainer(config, tmp_path / "run", progress=False)
    during = _global_state()
    assert during["threads"] == 1 and during["gc_frozen"] > 0 and not during["progress_bars"]
    assert during["python"] != before["python"] and during["torch"] != before["torch"]
    trainer.close()
    assert _global_state() == before
    with pytest.raises(RuntimeError, match="build a new one"):
        trainer.run()


def test_a_trainer_that_fails_to_build_restores_the_callers_state(tmp_path, as_a_caller) -> None:
    config = _config(tmp_path, model=str(tmp_path))
    before = as_a_caller()
    with pytest.raises(ConfigError, match="not a Hugging Face model directory"):  # raised after seeding
        Trainer(config, tmp_path / "run", progress=False)
    assert _global_state() == before


@pytest.mark.slow
def test_a_finished_run_restores_the_callers_state(tmp_path, as_a_caller) -> None:
    config = _config(tmp_path)
    before = as_a_caller()
    results = Trainer(config, tmp_path / "run", progress=False).run()
    assert results.steps == 1
    assert _global_state() == before


# -- resume ------------------------------------------------------------------------------------------------


def _write(out: Path) -> None:
    (out / "trainer.pt").write_bytes(b"state" * 10)
    (out / "model").mkdir()
    (out / "model" / "model.safetensors").write_bytes(b"weights" * 10)


def test_resume_names_the_rejected_checkpoint_its_file_and_the_step_it_resumes_from(tmp_path, capsys) -> None:
    manager = CheckpointManager(tmp_path / "checkpoints")
    for step in (2, 4, 6):
        manager.save(step, _write)
    (manager.path_for(6) / "trainer.pt").write_bytes(b"torn")
    (manager.path_for(4) / "model" / "model.safetensors").unlink()
    ckpt = resume_point(manager)
    assert ckpt is not None and ckpt.step == 2
    err = capsys.readouterr().err
    assert (f"resume: rejected checkpoint {manager.path_for(6)}: trainer.pt: size or checksum does not "
            "match the manifest (corrupted)") in err
    assert f"resume: rejected checkpoint {manager.path_for(4)}: model/model.safetensors: listed in" in err
    assert err.rstrip().endswith(f"resume: continuing from step 2 ({manager.path_for(2)})")


def test_resume_says_it_starts_fresh_when_no_checkpoint_verifies(tmp_path, capsys) -> None:
    manager = CheckpointManager(tmp_path / "checkpoints")
    assert resume_point(manager) is None
    assert f"resume: no checkpoint in {manager.root}; starting from step 0" in capsys.readouterr().err
    manager.save(1, _write)
    (manager.path_for(1) / "trainer.pt").write_bytes(b"torn")
    assert resume_point(manager) is None
    err = capsys.readouterr().err
    assert f"resume: rejected checkpoint {manager.path_for(1)}: trainer.pt" in err
    assert f"resume: no checkpoint verifies in {manager.root}; starting from step 0" in err


def test_a_resume_may_train_longer_only_where_nothing_else_depends_on_the_step_count(tmp_path) -> None:
    started = TrainingConfig(steps=10)
    check_run_dir(tmp_path, started, resume=False)
    check_run_dir(tmp_path, started.model_copy(update={"steps": 30}), resume=True)  # train longer
    saved = TrainingConfig.model_validate_json((tmp_path / "config.json").read_text())
    assert saved.steps == 30  # the run dir now records the config it goes on with
    decaying = started.model_copy(update={"optim": started.optim.model_copy(update={"schedule": "cosine"})})
    (tmp_path / "cosine").mkdir()
    check_run_dir(tmp_path / "cosine", decaying, resume=False)
    for run_dir, config in [
        (tmp_path / "cosine", decaying.model_copy(update={"steps": 30})),  # the decay would change
        (tmp_path, saved.model_copy(update={"steps": 20})),  # fewer steps
        (tmp_path, saved.model_copy(update={"steps": 40, "seed": 1})),  # anything else
    ]:
        with pytest.raises(ConfigError, match="`steps` may only grow"):
            check_run_dir(run_dir, config, resume=True)
