"""ModelRef: one grammar for every `model` field and `--model` flag."""

from __future__ import annotations

from pathlib import Path

import pytest

from coding_framework.config import ConfigError
from coding_framework.config.llm import LLMConfig
from coding_framework.config.model_ref import (
    ENDPOINT_FORMS,
    MODEL_FORMS,
    ModelRef,
    parse_endpoint_ref,
    parse_model_ref,
)
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


@pytest.mark.parametrize(
    ("built", "spec"),
    [
        (ModelRef.directory("/models/qwen"), "/models/qwen"),
        (ModelRef.directory(Path("/models/qwen"), engine="local"), "local:/models/qwen"),
        (ModelRef.registered("gen", version=3), "models:/gen/3"),
        (ModelRef.registered("gen", alias="previous", engine="vllm"), "vllm:models:/gen@previous"),
        (ModelRef.endpoint("http://host:8000/v1/", "coder"), "openai:http://host:8000/v1@coder"),
    ],
)
def test_a_constructor_builds_the_ref_its_spec_parses_to(built: ModelRef, spec: str) -> None:
    assert str(built) == spec and parse_model_ref(spec) == built


def test_an_endpoint_built_typed_keeps_an_at_in_its_served_name() -> None:
    ref = ModelRef.endpoint("http://host:8000/v1", "gen@3f2a")
    assert (ref.url, ref.served_model) == ("http://host:8000/v1", "gen@3f2a")
    with pytest.raises(ValueError, match="one of version and alias"):
        ModelRef.registered("gen")


@pytest.mark.parametrize(
    ("value", "url", "served"),
    [
        ("http://127.0.0.1:8000@base", "http://127.0.0.1:8000", "base"),
        ("http://host:8000/v1/@base", "http://host:8000/v1", "base"),
        ("openai:https://host/v1@org/base", "https://host/v1", "org/base"),
    ],
)
def test_engine_url_is_an_endpoint_model_spec(value: str, url: str, served: str) -> None:
    config = TrainingConfig.model_validate({"rollout": {"engine": "vllm", "engine_url": value},
                                            "policies": {"mode": "shared_lora"}})
    ref = config.rollout.engine_url
    assert ref is not None and (ref.kind, ref.url, ref.served_model) == ("endpoint", url, served)
    assert config.model_dump(mode="json")["rollout"]["engine_url"] == value  # the YAML users write


@pytest.mark.parametrize(
    "value", ["localhost:8000", "http://host:8000/v1", "embedded", "vllm:http://host@base", "ftp://h@m"]
)
def test_a_bad_engine_url_is_one_line_naming_the_endpoint_forms(value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_endpoint_ref(value)
    message = str(caught.value)
    assert "\n" not in message and repr(value) in message and ENDPOINT_FORMS in message
    with pytest.raises(ValueError, match="not an endpoint naming its model"):
        TrainingConfig.model_validate({"rollout": {"engine": "vllm", "engine_url": value}})
