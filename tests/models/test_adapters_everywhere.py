"""Every path that loads a model applies the role adapters its directory holds: the engine builder, the
supervisor (also after `train_agents`), the MLflow pyfunc, `data rank` and `train --model`. Each check
compares with what the adapter alone decodes and first shows that the base decodes otherwise, so a path
that dropped the adapters fails here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mlflow.pyfunc
import pytest
from safetensors.torch import load_file
from typer.testing import CliRunner

from coding_framework.cli.main import app
from coding_framework.config import ConfigError, WorkflowConfig, load_config
from coding_framework.config.llm import LLMConfig
from coding_framework.config.model_ref import parse_model_ref
from coding_framework.config.training import TrainingConfig
from coding_framework.llm import factory
from coding_framework.llm.base import SamplingParams
from coding_framework.llm.factory import build_chat_model
from coding_framework.models import ADAPTER_FILE, ResolvedModel
from coding_framework.problems.prompts import SYSTEM_PROMPT
from coding_framework.supervisor import CodingSupervisor
from coding_framework.testing.tiny_run import tiny_config
from coding_framework.training import Trainer
from coding_framework.training.run.pyfunc import GeneratorModel
from tests.serving.role_models import MAX_TOKENS, PROMPT, ROLES, alone, build_per_role_dir, reference
from tests.training.test_role_policies import PER_ROLE


@pytest.fixture(scope="module")
def per_role(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_per_role_dir(tmp_path_factory.mktemp("per-role") / "per-role")


@pytest.fixture(scope="module")
def expected(per_role: Path) -> dict[str | None, str]:
    out = {role: reference(per_role, role, PROMPT, MAX_TOKENS)[0] for role in (*ROLES, None)}
    assert len(set(out.values())) == 3, out  # each adapter, and the base, decodes differently
    return out


def _greedy(chat: Any) -> str:
    return str(chat.invoke(PROMPT, max_new_tokens=MAX_TOKENS, temperature=0.0).content)


def test_the_builder_and_the_supervisor_run_each_role_through_its_adapter(
    per_role: Path, expected: dict[str | None, str]
) -> None:
    config = LLMConfig.from_spec(f"local:{per_role}", device="cpu")
    for role in ROLES:
        assert _greedy(build_chat_model(config, role=role)) == expected[role]
    workflow = WorkflowConfig()
    workflow.agents.model = parse_model_ref(str(per_role))
    workflow.agents.reviewer.backend = "llm"
    with CodingSupervisor(workflow) as supervisor:
        agents = supervisor.agents
        assert _greedy(agents.generator.chat_model) == expected["generator"]
        assert agents.reviewer is not None
        assert _greedy(getattr(agents.reviewer, "chat_model", None)) == expected["reviewer"]


def test_the_pyfunc_answers_with_the_generators_adapter(per_role: Path) -> None:
    def answer(role: str | None) -> str:
        engine = alone(per_role, role)
        tok = engine.tokenizer
        text = tok.apply_chat_template([{"role": "system", "content": SYSTEM_PROMPT},
                                        {"role": "user", "content": PROMPT}],
                                       tokenize=False, add_generation_prompt=True)
        ids = list(tok(text, add_special_tokens=False)["input_ids"])
        return engine.generate(ids, SamplingParams(max_new_tokens=MAX_TOKENS, temperature=0.0)).text

    adapter, base = answer("generator"), answer(None)
    assert adapter != base
    model = GeneratorModel()
    model.load_context(mlflow.pyfunc.PythonModelContext(artifacts={"hf_model": str(per_role)},
                                                        model_config={}))
    assert model.predict(None, [PROMPT], {"max_new_tokens": MAX_TOKENS}) == [adapter]


def test_data_rank_loads_the_adapters(per_role: Path, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    attached: list[tuple[str, ...]] = []
    real = factory.attach_role_adapters

    def recording(engine: Any, model: ResolvedModel) -> None:
        real(engine, model)
        attached.append(tuple(a.name for a in model.adapters))

    monkeypatch.setattr(factory, "attach_role_adapters", recording)
    done = CliRunner().invoke(app, ["data", "rank", "--benchmark", "builtin", "--model", str(per_role),
                                    "-n", "1", "--limit", "1", "--out", str(tmp_path / "ranked.jsonl")])
    assert done.exit_code == 0, done.output
    assert attached == [ROLES]


@pytest.mark.slow
def test_train_agents_then_solve_and_train_model_continue_the_trained_adapters(tmp_path: Path) -> None:
    config = load_config(TrainingConfig, tiny_config(tmp_path, **{**PER_ROLE, "steps": 1}))
    with CodingSupervisor(config.workflow) as supervisor:
        results = supervisor.train_agents(config=config, run_dir=tmp_path / "run", progress=False)
        final = results.final_model_dir
        assert str(supervisor.config.agents.model) == f"local:{final}"
        engine: Any = getattr(supervisor.agents.generator.chat_model, "engine", None)
        assert engine.adapters is not None and engine.adapters.names == list(ROLES)
        for role in ROLES:
            saved = load_file(str(final / "adapters" / role / ADAPTER_FILE))
            loaded = engine.adapters.state_dict(role)
            assert all(bool((loaded[k].cpu() == v).all()) for k, v in saved.items()), role

    # `train --model` from the trained directory continues its adapters, not fresh ones ...
    again = config.model_copy(update={"model": parse_model_ref(str(final))})
    trainer = Trainer(again, tmp_path / "again", progress=False)
    try:
        assert trainer.policies.adapters is not None
        for role in ROLES:
            saved = load_file(str(final / "adapters" / role / ADAPTER_FILE))
            state = trainer.policies.adapters.state_dict(role)
            assert all(bool((state[k].cpu() == v).all()) for k, v in saved.items()), role
    finally:
        trainer.close()
    # ... and a config that would train over them as if they were not there is refused in one line.
    full = again.model_copy(update={"policies": again.policies.model_copy(update={"mode": "full"})})
    with pytest.raises(ConfigError, match="holds LoRA adapters") as caught:
        Trainer(full, tmp_path / "full", progress=False)
    assert "\n" not in str(caught.value)
