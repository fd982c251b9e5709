"""The rollout engine registry: ``rollout.engine`` names a registered factory, the config accepts exactly the
registered names, and a module of the engines package registers without any other edit."""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path
from typing import Any, get_args

import pytest

from coding_framework.config import ConfigError, load_config
from coding_framework.config.training import RolloutEngineName, TrainingConfig
from coding_framework.embedded.architecture import init_model
from coding_framework.llm.local import LocalEngine
from coding_framework.testing.engine import tiny_tokenizer
from coding_framework.testing.models import TINY
from coding_framework.training.rollouts.engines import (
    ROLLOUT_ENGINES,
    LocalCopyEngine,
    PolicySnapshot,
    TrainerEngine,
    build_rollout_engine,
    register_rollout_engine,
)
from coding_framework.training.rollouts.engines.local_copy import local_engine
from coding_framework.training.rollouts.engines.vllm_engine import vllm_engine


class WholeModel:
    """The policy of a run that trains the whole model (no adapters)."""

    adapters = None

    def __init__(self, engine: LocalEngine) -> None:
        self.engine = engine

    def snapshot(self) -> PolicySnapshot:
        return {"": {k: v.detach().clone() for k, v in self.engine.model.state_dict().items()}}

    def save_model(self, directory: Path, tokenizer: Any) -> None:
        raise AssertionError("a local engine saves nothing")


@functools.cache
def _engine() -> LocalEngine:
    return LocalEngine(init_model(TINY, tiny_tokenizer(), seed=0), tiny_tokenizer(), device="cpu")


def _config(**rollout: Any) -> TrainingConfig:
    return load_config(TrainingConfig, overrides={"rollout": rollout})


def test_the_config_accepts_exactly_the_registered_engines() -> None:
    assert set(get_args(RolloutEngineName)) == set(ROLLOUT_ENGINES), (
        "register each rollout engine in a module of training/rollouts/engines/ and name it in "
        "config/training.py's RolloutEngineName"
    )
    assert ROLLOUT_ENGINES["local"] is local_engine and ROLLOUT_ENGINES["vllm"] is vllm_engine


def test_local_is_the_trainer_s_own_engine_when_synchronous_and_a_copy_otherwise(tmp_path: Path) -> None:
    engine = _engine()
    own = build_rollout_engine(_config(max_staleness=0), engine, WholeModel(engine), tmp_path)
    assert isinstance(own, TrainerEngine) and own.engine is engine
    copy = build_rollout_engine(_config(max_staleness=1), engine, WholeModel(engine), tmp_path)
    assert isinstance(copy, LocalCopyEngine) and copy.engine.model is not engine.model
    copy.publish(0, WholeModel(engine).snapshot())
    assert copy.engine_for(0).policy_version == "0"
    copy.close()


def test_an_unregistered_engine_fails_listing_the_registered_ones(tmp_path: Path) -> None:
    config = _config()
    config.rollout = config.rollout.model_copy(update={"engine": "sglang"})  # past the config's own check
    with pytest.raises(ConfigError, match=r"^unknown rollout engine 'sglang'; valid rollout engines: "
                                          r"\['local', 'vllm'\]$"):
        build_rollout_engine(config, _engine(), WholeModel(_engine()), tmp_path)


def test_a_taken_name_is_refused() -> None:
    with pytest.raises(ValueError, match="rollout engine 'local' is already registered"):
        register_rollout_engine("local")(vllm_engine)
    assert ROLLOUT_ENGINES["local"] is local_engine


def test_a_module_in_the_package_registers_without_any_other_edit(tmp_path: Path) -> None:
    (tmp_path / "trainer_only.py").write_text(
        "from coding_framework.training.rollouts.engines.base import register_rollout_engine\n"
        "from coding_framework.training.rollouts.engines.local_copy import TrainerEngine\n\n\n"
        "@register_rollout_engine('trainer_only')\n"
        "def trainer_only(config, engine, policy, work_dir):\n"
        "    return TrainerEngine(engine)\n"
    )
    script = (  # a fresh interpreter imports the package with tmp_path as one more of its folders
        "import importlib.util, sys\n"
        "spec = importlib.util.find_spec('coding_framework.training.rollouts.engines')\n"
        f"spec.submodule_search_locations.append({str(tmp_path)!r})\n"
        "engines = sys.modules[spec.name] = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(engines)\n"
        "print(sorted(engines.ROLLOUT_ENGINES))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['local', 'trainer_only', 'vllm']"
