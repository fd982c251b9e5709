"""ModelRef: one grammar for every `model` field and `--model` flag."""

from __future__ import annotations

from pathlib import Path

import pytest

from coding_framework.config import ConfigError
from coding_framework.config.llm import LLMConfig
from coding_framework.config.model_ref import MODEL_FORMS, parse_model_ref
from coding_framework.config.serving import ServingConfig
from coding_framework.config.training import TrainingConfig


@pytest.mark.parametrize(
    "spec,kind,engine,fields",
    [
        ("embedded", "embedded", None, {}),
        ("smollm2-135m", "named", None, {}),
        ("vllm:smollm2-135m", "named", "vllm", {}),
        ("./smollm2-135m", "dir", None, {"path": Path("smollm2-135m")}),
        ("/models/qwen", "dir", None, {"path": Path("/models/qwen")}),
        ("local:/models/qwen", "dir", "local", {"path": Path("/models/qwen")}),
        ("models:/gen/3", "registry", None, {"registry_name": "gen", "registry_version": 3}),
        ("models:/gen@challenger", "registry", None,
         {"registry_name": "gen", "registry_alias": "challenger"}),
        ("vllm:models:/gen@champion", "registry", "vllm", {"registry_alias": "champion"}),
        ("process:embedded", "embedded", "process", {}),
        ("openai:http://localhost:8000/v1@my-model", "endpoint", None,
         {"url": "http://localhost:8000/v1", "served_model": "my-model"}),
        ("openai:https://user@host/v1@org/model", "endpoint", None,
         {"url": "https://user@host/v1", "served_model": "org/model"}),
        ("http://host:8000/v1@coder", "endpoint", None,
         {"url": "http://host:8000/v1", "served_model": "coder"}),
        ("http://host:8000/v1", "endpoint", None, {"url": "http://host:8000/v1", "served_model": None}),
    ],
)
def test_every_spelling_parses(spec: str, kind: str, engine: str | None, fields: dict) -> None:
    ref = parse_model_ref(spec)
    assert (ref.kind, ref.engine) == (kind, engine)
    assert {k: getattr(ref, k) for k in fields} == fields
    assert str(ref) == spec  # a ref writes back the spec it was parsed from


@pytest.mark.parametrize(
    "spec,why",
    [
        ("", "empty"),
        ("models:/gen", "models:/NAME/VERSION"),
        ("openai:http://localhost:8000/v1", "after '@'"),
        ("openai:localhost:8000@m", "http"),
        ("ftp://host/model", "http"),
        ("vllm:", "nothing follows"),
        ("vllm:process:embedded", "one engine"),
    ],
)
def test_a_bad_spec_is_one_line_naming_it_and_the_forms(spec: str, why: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_model_ref(spec)
    message = str(caught.value)
    assert "\n" not in message and why in message and repr(spec) in message and MODEL_FORMS in message


def test_every_model_field_is_a_model_ref_that_round_trips() -> None:
    llm = LLMConfig.from_spec("local:/m", timeout_s=5, sampling={"temperature": 0.7})
    assert (llm.model.kind, llm.timeout_s, llm.sampling.temperature) == ("dir", 5, 0.7)
    for config in (llm, ServingConfig(model="models:/gen@challenger"), TrainingConfig(model="/some/dir")):
        dumped = config.model_dump(mode="json")
        assert isinstance(dumped["model"], str)
        assert type(config).model_validate(dumped).model == config.model
    with pytest.raises(ValueError, match="models:/NAME/VERSION"):
        ServingConfig(model="models:/gen")
