"""Model versions: a name plus the checksum of its weights, resolved from what a user typed.

Specs: ``embedded``; a Hugging Face model directory; ``models:/NAME/VERSION`` or ``models:/NAME@ALIAS``
from the MLflow registry the trainer writes to (downloaded once to ``ServingConfig.model_cache``, then
attested: the registry's ``weights_sha256`` tag must match the downloaded weights); and
``http(s)://HOST[:PORT][/v1][@MODEL]``, an OpenAI-compatible endpoint. An endpoint's weights cannot be
read, so its checksum is that of its address and model name: it names the endpoint, it attests nothing.

A model directory that holds per-role LoRA adapters (``adapters/<name>/``, as ``RolePolicies.save_model``
writes them) is ONE version: the base plus every adapter. Its checksum covers the base weights, each
adapter's tensors and each adapter's ``adapter_config.json`` (rank and alpha change what it computes), so two
trainings that differ only in one role's adapter are two versions (the config is hashed in a canonical form,
``adapter_config_bytes``). A registry version's adapters are
attested one by one against its ``adapter_sha256.<name>`` tags, as the whole is against ``weights_sha256``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import httpx
import yaml

from coding_framework.config.policies import ADAPTER_CONFIG, ADAPTERS_DIR
from coding_framework.config.serving import ServingConfig
from coding_framework.llm.weights import weights_checksum
from coding_framework.training.tracking import ADAPTER_TAG, WEIGHTS_TAG, adapter_checksums

SPEC_FORMS = (
    "embedded, a model directory, models:/NAME/VERSION, models:/NAME@ALIAS or http(s)://HOST/v1@MODEL"
)
_REGISTRY = re.compile(r"^models:/(?P<name>[^/@]+)(?:/(?P<version>\d+)|@(?P<alias>[\w.-]+))$")
_VOLATILE = ("base_model_name_or_path", "revision", "peft_version", "inference_mode")


@dataclass(frozen=True)
class RoleAdapter:
    """One LoRA adapter of a version: ``path`` is its peft directory, ``sha256`` that of its tensors file
    (what the registry's ``adapter_sha256.<name>`` tag holds)."""

    name: str
    path: Path
    sha256: str


@dataclass(frozen=True)
class Version:
    """One servable model. ``id`` (``name@checksum[:12]``) is the string every response and rollout uses.

    ``adapters``: the per-role LoRA adapters on its base, by name order (empty: one policy for every role).
    """

    name: str
    checksum: str
    spec: str
    model_dir: Path | None = None
    base_url: str | None = None
    served_model: str | None = None
    registry: tuple[str, int] | None = None
    tracking_uri: str | None = None
    adapters: tuple[RoleAdapter, ...] = ()

    @property
    def id(self) -> str:
        return f"{self.name}@{self.checksum[:12]}"


def resolve_version(spec: str, config: ServingConfig) -> Version:
    """The version ``spec`` names; a ``ValueError`` with a one-line reason when it names none."""
    spec = spec.strip()
    if spec == "embedded":
        from coding_framework.embedded import ensure_embedded_model

        return _dir_version("embedded", ensure_embedded_model(), spec)
    if spec.startswith("models:/"):
        return _registry_version(spec, config)
    if spec.startswith(("http://", "https://")):
        return _endpoint_version(spec)
    path = Path(spec).expanduser()
    if path.is_dir() and (path / "config.json").is_file():
        path = path.resolve()
        return _dir_version(path.name, path, spec)
    raise ValueError(f"cannot resolve model {spec!r}: expected {SPEC_FORMS}")


def role_adapters(model_dir: Path) -> tuple[RoleAdapter, ...]:
    """The adapters ``model_dir/adapters/`` holds; a ValueError names one that lacks its config."""
    out = []
    for name, digest in adapter_checksums(model_dir).items():
        path = model_dir / ADAPTERS_DIR / name
        if not (path / ADAPTER_CONFIG).is_file():
            raise ValueError(f"{path} has adapter weights but no {ADAPTER_CONFIG}; it cannot be served")
        out.append(RoleAdapter(name, path, digest))
    return tuple(out)


def version_checksum(model_dir: Path, adapters: tuple[RoleAdapter, ...]) -> str:
    """``weights_checksum`` (which covers the base and every adapter's tensors), extended by each adapter's
    name and config when there are adapters; unchanged for a model without adapters."""
    weights = weights_checksum(model_dir)
    if not adapters:
        return weights
    digest = hashlib.sha256(weights.encode())
    for adapter in adapters:
        config = hashlib.sha256(adapter_config_bytes(adapter.path)).hexdigest()
        digest.update(f"\0{adapter.name}\0{adapter.sha256}\0{config}".encode())
    return digest.hexdigest()


def adapter_config_bytes(path: Path) -> bytes:
    """An adapter's peft config in a canonical form: what it computes, without where it was made (peft
    writes the base's path, its own version, and ``target_modules`` in set order, which varies by run)."""
    config = json.loads((path / ADAPTER_CONFIG).read_text())
    for key in _VOLATILE:
        config.pop(key, None)
    if isinstance(config.get("target_modules"), list):
        config["target_modules"] = sorted(config["target_modules"])
    return json.dumps(config, sort_keys=True).encode()


def _dir_version(name: str, path: Path, spec: str, registry: tuple[str, int] | None = None,
                 tracking_uri: str | None = None) -> Version:
    adapters = role_adapters(path)
    return Version(name, version_checksum(path, adapters), spec, model_dir=path, registry=registry,
                   tracking_uri=tracking_uri, adapters=adapters)


def _endpoint_version(spec: str) -> Version:
    url, _at, model = spec.rpartition("@") if "@" in spec.split("://", 1)[1] else (spec, "", "")
    url = url.rstrip("/")
    api = url if url.endswith("/v1") else f"{url}/v1"
    if not model:
        model = _first_served_model(api)
    digest = hashlib.sha256(f"{api}\0{model}".encode()).hexdigest()
    return Version(model, digest, spec, base_url=api, served_model=model)


def _first_served_model(api: str) -> str:
    try:
        data = httpx.get(f"{api}/models", timeout=10).json()["data"]
        return str(data[0]["id"])
    except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
        raise ValueError(
            f"cannot list the models of {api} ({type(exc).__name__}); name one: {api}@MODEL"
        ) from None


def tracking_uri(config: ServingConfig) -> str:
    uri = config.mlflow_uri or os.environ.get("MLFLOW_TRACKING_URI")
    if not uri:
        raise ValueError(
            "a models:/ spec needs a registry: set mlflow_uri in the config or MLFLOW_TRACKING_URI"
        )
    return uri


def _registry_version(spec: str, config: ServingConfig) -> Version:
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    match = _REGISTRY.match(spec)
    if match is None:
        raise ValueError(f"cannot parse {spec!r}: use models:/NAME/VERSION or models:/NAME@ALIAS")
    uri = tracking_uri(config)
    client = MlflowClient(tracking_uri=uri, registry_uri=uri)
    name = match["name"]
    try:
        if match["alias"]:
            found = client.get_model_version_by_alias(name, match["alias"])
        else:
            found = client.get_model_version(name, match["version"])
        source = client.get_model_version_download_uri(name, found.version)
        hf_dir = _download(name, int(found.version), source, uri, config.model_cache)
    except MlflowException as exc:
        raise ValueError(f"the registry at {uri} has no {spec}: {exc.message.splitlines()[0]}") from None
    except (KeyError, TypeError):
        raise ValueError(f"{spec} is not a coding-framework model (no `hf_model` artifact)") from None
    tags = found.tags or {}
    _attest_adapters(spec, tags, adapter_checksums(hf_dir))
    checksum = weights_checksum(hf_dir)
    expected = tags.get(WEIGHTS_TAG)
    if expected is not None and expected != checksum:
        raise ValueError(
            f"attestation failed for {spec}: the registry says {WEIGHTS_TAG}={expected[:12]}..., the "
            f"downloaded weights hash to {checksum[:12]}...; refusing to serve them"
        )
    version = int(found.version)
    return _dir_version(f"{name}/{version}", hf_dir, spec, registry=(name, version), tracking_uri=uri)


def _attest_adapters(spec: str, tags: dict[str, str], found: dict[str, str]) -> None:
    """Each downloaded adapter must hash to its ``adapter_sha256.<name>`` tag, and each tagged adapter must
    be there. A version registered before adapters were tagged (no such tags) is attested as a whole."""
    expected = {k.removeprefix(ADAPTER_TAG): v for k, v in tags.items() if k.startswith(ADAPTER_TAG)}
    if not expected:
        return
    for name in sorted(set(expected) | set(found)):
        want, got = expected.get(name), found.get(name)
        if want is None:
            raise ValueError(f"attestation failed for {spec}: adapter {name!r} has no {ADAPTER_TAG}{name} "
                             "tag; refusing to serve it")
        if got is None:
            raise ValueError(f"attestation failed for {spec}: the registry attests adapter {name!r}, the "
                             "download has no such adapter")
        if want != got:
            raise ValueError(
                f"attestation failed for {spec}: the registry says {ADAPTER_TAG}{name}={want[:12]}..., the "
                f"downloaded adapter {name!r} hashes to {got[:12]}...; refusing to serve it"
            )


def _download(name: str, version: int, source: str, uri: str, cache: Path) -> Path:
    """The version's ``hf_model`` artifact directory (its path is in the pyfunc's MLmodel), downloaded once
    (atomically) into ``cache``. Raises KeyError when the model is not the trainer's pyfunc."""
    import mlflow.artifacts

    dest = cache.expanduser() / re.sub(r"[^\w.-]", "_", name) / str(version)
    if (dest / "config.json").is_file():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=dest.parent, prefix=".download-"))
    try:
        root = source.rstrip("/")
        mlmodel = mlflow.artifacts.download_artifacts(
            artifact_uri=f"{root}/MLmodel", dst_path=str(staging / "meta"), tracking_uri=uri
        )
        artifacts = yaml.safe_load(Path(mlmodel).read_text())["flavors"]["python_function"]["artifacts"]
        got = mlflow.artifacts.download_artifacts(
            artifact_uri=f"{root}/{artifacts['hf_model']['path']}",
            dst_path=str(staging / "hf"),
            tracking_uri=uri,
        )
        if dest.exists():
            shutil.rmtree(dest)
        Path(got).rename(dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return dest
