"""Model versions: a name plus the checksum of its weights, resolved from what a user typed.

Specs: ``embedded``; a Hugging Face model directory; ``models:/NAME/VERSION`` or ``models:/NAME@ALIAS``
from the MLflow registry the trainer writes to (downloaded once to ``ServingConfig.model_cache``, then
attested: the registry's ``weights_sha256`` tag must match the downloaded weights); and
``http(s)://HOST[:PORT][/v1][@MODEL]``, an OpenAI-compatible endpoint. An endpoint's weights cannot be
read, so its checksum is that of its address and model name: it names the endpoint, it attests nothing.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import httpx
import yaml

from coding_framework.config.serving import ServingConfig
from coding_framework.llm.weights import weights_checksum

WEIGHTS_TAG = "weights_sha256"
SPEC_FORMS = (
    "embedded, a model directory, models:/NAME/VERSION, models:/NAME@ALIAS or http(s)://HOST/v1@MODEL"
)
_REGISTRY = re.compile(r"^models:/(?P<name>[^/@]+)(?:/(?P<version>\d+)|@(?P<alias>[\w.-]+))$")


@dataclass(frozen=True)
class Version:
    """One servable model. ``id`` (``name@checksum[:12]``) is the string every response and rollout uses."""

    name: str
    checksum: str
    spec: str
    model_dir: Path | None = None
    base_url: str | None = None
    served_model: str | None = None
    registry: tuple[str, int] | None = None
    tracking_uri: str | None = None

    @property
    def id(self) -> str:
        return f"{self.name}@{self.checksum[:12]}"


def resolve_version(spec: str, config: ServingConfig) -> Version:
    """The version ``spec`` names; a ``ValueError`` with a one-line reason when it names none."""
    spec = spec.strip()
    if spec == "embedded":
        from coding_framework.embedded import ensure_embedded_model

        path = ensure_embedded_model()
        return Version("embedded", weights_checksum(path), spec, model_dir=path)
    if spec.startswith("models:/"):
        return _registry_version(spec, config)
    if spec.startswith(("http://", "https://")):
        return _endpoint_version(spec)
    path = Path(spec).expanduser()
    if path.is_dir() and (path / "config.json").is_file():
        path = path.resolve()
        return Version(path.name, weights_checksum(path), spec, model_dir=path)
    raise ValueError(f"cannot resolve model {spec!r}: expected {SPEC_FORMS}")


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
    checksum = weights_checksum(hf_dir)
    expected = (found.tags or {}).get(WEIGHTS_TAG)
    if expected is not None and expected != checksum:
        raise ValueError(
            f"attestation failed for {spec}: the registry says {WEIGHTS_TAG}={expected[:12]}..., the "
            f"downloaded weights hash to {checksum[:12]}...; refusing to serve them"
        )
    version = int(found.version)
    return Version(
        f"{name}/{version}", checksum, spec, model_dir=hf_dir, registry=(name, version), tracking_uri=uri
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
