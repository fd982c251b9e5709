"""One resolver from a ``ModelRef`` to what runs: a local, attested model directory or an endpoint.

``resolve_model`` builds the embedded model on first use, checks that a directory is a Hugging Face model,
downloads and attests a registry version (``models.registry``), and lists an endpoint's first model when
the spec names none. The result names the model the same way everywhere: ``id`` (``name@checksum[:12]``) is
what serving answers with and what a rollout compares. An endpoint's weights cannot be read, so its
checksum is that of its address and model name: it names the endpoint, it attests nothing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import httpx

from coding_framework.config.embedded import EmbeddedModelConfig
from coding_framework.config.model_ref import MODEL_FORMS, ModelRef, parse_model_ref
from coding_framework.config.policies import PoliciesConfig
from coding_framework.models.checksums import adapter_checksums, version_checksum
from coding_framework.models.layout import RoleAdapter, find_adapters, is_model_dir, policies_for
from coding_framework.models.registry import RegistryError, download_version, registry_cache, tracking_uri

__all__ = ["ModelError", "ResolvedModel", "resolve_model"]


class ModelError(ValueError):
    """A model spec that names no usable model; the message is one line naming the spec."""


@dataclass(frozen=True)
class ResolvedModel:
    """A model ready to load. ``model_dir`` for weights on disk (the embedded model, a directory, a
    downloaded registry version), or ``base_url`` and ``served_model`` for an endpoint. ``adapters``: the
    per-role LoRA adapters on its base, by name order (empty: one policy for every role). ``ref`` keeps
    the engine prefix the spec named, if any."""

    ref: ModelRef
    name: str
    checksum: str
    model_dir: Path | None = None
    base_url: str | None = None
    served_model: str | None = None
    registry: tuple[str, int] | None = None
    tracking_uri: str | None = None
    adapters: tuple[RoleAdapter, ...] = ()

    @property
    def id(self) -> str:
        return f"{self.name}@{self.checksum[:12]}"

    @property
    def spec(self) -> str:
        return str(self.ref)

    @property
    def policies(self) -> PoliciesConfig | None:
        """How roles map to this model's adapters (None: one policy for every role)."""
        return policies_for(self.adapters)


def resolve_model(
    ref: ModelRef | str,
    *,
    registry_uri: str | None = None,
    cache_dir: Path | None = None,
    embedded: EmbeddedModelConfig | None = None,
    progress: bool = False,
) -> ResolvedModel:
    """What ``ref`` names, ready to load; a one-line ``ModelError`` naming the spec when it names nothing.

    ``registry_uri`` overrides ``$MLFLOW_TRACKING_URI`` for ``models:/`` refs; ``cache_dir`` where their
    downloads go; ``embedded`` how the embedded model is built (default: the shipped recipe).
    """
    try:
        ref = parse_model_ref(ref)
    except ValueError as exc:
        raise ModelError(str(exc)) from None
    try:
        if ref.kind == "embedded":
            from coding_framework.embedded import ensure_embedded_model

            path = ensure_embedded_model(embedded or EmbeddedModelConfig(), progress=progress)
            return _from_dir(ref, "embedded", path)
        if ref.kind == "named":
            from coding_framework.models.pretrained import ensure_pretrained

            return _from_dir(ref, ref.spec, ensure_pretrained(ref.spec))
        if ref.kind == "registry":
            return _from_registry(ref, registry_uri, cache_dir)
        if ref.kind == "endpoint":
            return _from_endpoint(ref)
        assert ref.path is not None
        if not is_model_dir(ref.path):
            raise ValueError("not a Hugging Face model directory (no config.json)" if ref.path.is_dir()
                             else "no such model directory")
        path = ref.path.resolve()
        return _from_dir(ref, path.name, path)
    except (RegistryError, ValueError) as exc:
        raise ModelError(f"model {str(ref)!r}: {exc}; expected {MODEL_FORMS}") from None


def _from_dir(ref: ModelRef, name: str, path: Path, registry: tuple[str, int] | None = None,
              uri: str | None = None) -> ResolvedModel:
    checksums = adapter_checksums(path)
    adapters = find_adapters(path, checksums)
    return ResolvedModel(ref, name, version_checksum(path, checksums), model_dir=path, registry=registry,
                         tracking_uri=uri, adapters=adapters)


def _from_registry(ref: ModelRef, explicit_uri: str | None, cache_dir: Path | None) -> ResolvedModel:
    uri = tracking_uri(explicit_uri)
    if uri is None:
        raise ValueError("a models:/ spec needs a registry: set MLFLOW_TRACKING_URI (or the config's "
                         "mlflow_uri)")
    assert ref.registry_name is not None
    version, path = download_version(ref.spec, ref.registry_name, ref.registry_version, ref.registry_alias,
                                     uri, registry_cache(cache_dir))
    return _from_dir(ref, f"{ref.registry_name}/{version}", path, (ref.registry_name, version), uri)


def _from_endpoint(ref: ModelRef) -> ResolvedModel:
    assert ref.url is not None
    api = ref.url if ref.url.endswith("/v1") else f"{ref.url}/v1"
    model = ref.served_model or _first_served_model(api)
    digest = hashlib.sha256(f"{api}\0{model}".encode()).hexdigest()
    return ResolvedModel(ref, model, digest, base_url=api, served_model=model)


def _first_served_model(api: str) -> str:
    try:
        data = httpx.get(f"{api}/models", timeout=10).json()["data"]
        return str(data[0]["id"])
    except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
        raise ValueError(
            f"cannot list the models of {api} ({type(exc).__name__}); name one: {api}@MODEL"
        ) from None
