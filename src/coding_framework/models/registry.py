"""The MLflow registry contract, written once: what the trainer registers and what every loader reads back.

A registered version is our pyfunc, ``coding_framework.training.GeneratorModel``, stored as code that
imports it by that public path (``training/run/pyfunc.py``'s ``LOADER``), with the Hugging Face directory
as its ``hf_model`` artifact, tagged ``weights_sha256`` (``weights_checksum`` of the directory) and, per
adapter, ``adapter_sha256.<name>``. A fresh version gets the alias ``challenger``; a promotion moves
``champion`` to it and ``previous`` to the version it replaced. The registry is the one
``MLFLOW_TRACKING_URI`` names (or a config's explicit URI), and downloaded versions are cached under
``registry_cache()``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from coding_framework.models.checksums import adapter_checksums, weights_checksum

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient

    from coding_framework.config.model_ref import ModelRef

__all__ = [
    "ADAPTER_TAG", "CHALLENGER_ALIAS", "CHAMPION_ALIAS", "GATE_PASSED_TAG", "GATE_REASON_TAG", "HF_ARTIFACT",
    "PREVIOUS_ALIAS", "TRACKING_ENV", "WEIGHTS_TAG", "RegistryError", "attest", "download_version",
    "fallback_tracking_uri", "gate_failure", "mlflow_client",
    "registry_cache", "run_store_uri", "tag_version", "tracking_uri",
]

TRACKING_ENV = "MLFLOW_TRACKING_URI"
HF_ARTIFACT = "hf_model"
WEIGHTS_TAG = "weights_sha256"
ADAPTER_TAG = "adapter_sha256."  # + the adapter's name: one tag per adapter of a registered version
CHALLENGER_ALIAS = "challenger"
CHAMPION_ALIAS = "champion"
PREVIOUS_ALIAS = "previous"
# The training run's regression gate (``training.gate``): a version that failed it has no `challenger` alias.
GATE_PASSED_TAG = "gate.passed"
GATE_REASON_TAG = "gate.reason"


class RegistryError(ValueError):
    """A registry version that cannot be found, downloaded or attested; the message is one line."""


def tracking_uri(explicit: str | None = None) -> str | None:
    """``explicit`` if given, else ``$MLFLOW_TRACKING_URI`` (None when neither is set)."""
    return explicit or os.environ.get(TRACKING_ENV) or None


def run_store_uri(run_dir: Path) -> str:
    """A run's own store: SQLite in its directory (a training run's default)."""
    return f"sqlite:///{run_dir.resolve() / 'mlflow.db'}"


def fallback_tracking_uri() -> str:
    """``tracking_uri()``, else a SQLite store in the user cache (never a file in the working directory)."""
    from coding_framework.embedded import cache_root

    found = tracking_uri()
    if found:
        return found
    folder = cache_root() / "rollouts"
    folder.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{folder / 'mlflow.db'}"


def registry_cache(explicit: Path | None = None) -> Path:
    """Where registry versions are downloaded: ``explicit``, else ``<cache root>/registry``."""
    from coding_framework.embedded import cache_root

    return explicit.expanduser() if explicit is not None else cache_root() / "registry"


def mlflow_client(uri: str) -> MlflowClient:
    from mlflow.tracking import MlflowClient

    # Creating or migrating a SQLite store logs at INFO to stderr; a command's stderr is for the user.
    for name in ("mlflow.store.db.utils", "alembic.runtime.migration"):
        logging.getLogger(name).setLevel(logging.WARNING)
    return MlflowClient(tracking_uri=uri, registry_uri=uri)


def gate_failure(ref: ModelRef) -> str | None:
    """Why the registry version ``ref`` names failed its training run's regression gate (its ``gate.passed``
    tag is ``false``); None when it passed, carries no verdict, or cannot be looked up here."""
    from mlflow.exceptions import MlflowException

    uri = tracking_uri()
    if uri is None or ref.registry_name is None:
        return None
    client = mlflow_client(uri)
    try:
        name = ref.registry_name
        found = (client.get_model_version_by_alias(name, ref.registry_alias) if ref.registry_alias
                 else client.get_model_version(name, str(ref.registry_version)))
    except MlflowException:
        return None  # the server resolves it and answers for a missing version
    tags = found.tags or {}
    return tags.get(GATE_REASON_TAG, "no reason recorded") if tags.get(GATE_PASSED_TAG) == "false" else None


def tag_version(client: MlflowClient, name: str, version: int, model_dir: Path) -> dict[str, str]:
    """Tag a registered version with the checksums loaders attest; returns the adapters' checksums."""
    client.set_model_version_tag(name, str(version), WEIGHTS_TAG, weights_checksum(model_dir))
    adapters = adapter_checksums(model_dir)
    for adapter, digest in adapters.items():
        client.set_model_version_tag(name, str(version), ADAPTER_TAG + adapter, digest)
    return adapters


def download_version(spec: str, name: str, version: int | None, alias: str | None, uri: str,
                     cache: Path) -> tuple[int, Path]:
    """``(version, directory)`` of the registered version ``spec`` names, downloaded once (atomically)
    into ``cache`` and attested against its tags; a ``RegistryError`` otherwise."""
    from mlflow.exceptions import MlflowException

    client = mlflow_client(uri)
    try:
        found = (client.get_model_version_by_alias(name, alias) if alias
                 else client.get_model_version(name, str(version)))
        source = client.get_model_version_download_uri(name, found.version)
        dest = _cache_dir(cache, uri, name, int(found.version))
        model_dir = _download(source, uri, dest)
        try:
            attest(spec, found.tags or {}, model_dir)
        except RegistryError:  # a stale copy (the store was made anew at the same place): fetch it again
            shutil.rmtree(model_dir)
            model_dir = _download(source, uri, dest)
            attest(spec, found.tags or {}, model_dir)
    except MlflowException as exc:
        raise RegistryError(f"the registry at {uri} has no {spec}: {exc.message.splitlines()[0]}") from None
    except (KeyError, TypeError):
        raise RegistryError(f"{spec} is not a coding-framework model (no `{HF_ARTIFACT}` artifact)") from None
    return int(found.version), model_dir


def attest(spec: str, tags: dict[str, str], model_dir: Path) -> None:
    """The directory must hash to the version's ``weights_sha256`` and each adapter to its
    ``adapter_sha256.<name>`` tag, and each tagged adapter must be there. A version registered before
    adapters were tagged (no such tags) is attested as a whole."""
    expected = {k.removeprefix(ADAPTER_TAG): v for k, v in tags.items() if k.startswith(ADAPTER_TAG)}
    found = adapter_checksums(model_dir)
    for name in sorted(set(expected) | set(found)) if expected else ():
        want, got = expected.get(name), found.get(name)
        if want is None:
            raise RegistryError(f"attestation failed for {spec}: adapter {name!r} has no {ADAPTER_TAG}{name} "
                                "tag; refusing to load it")
        if got is None:
            raise RegistryError(f"attestation failed for {spec}: the registry attests adapter {name!r}, the "
                                "download has no such adapter")
        if want != got:
            raise RegistryError(
                f"attestation failed for {spec}: the registry says {ADAPTER_TAG}{name}={want[:12]}..., the "
                f"downloaded adapter {name!r} hashes to {got[:12]}...; refusing to load it"
            )
    weights = tags.get(WEIGHTS_TAG)
    if weights is not None and weights != (got_weights := weights_checksum(model_dir)):
        raise RegistryError(
            f"attestation failed for {spec}: the registry says {WEIGHTS_TAG}={weights[:12]}..., the "
            f"downloaded weights hash to {got_weights[:12]}...; refusing to load them"
        )


def _cache_dir(cache: Path, uri: str, name: str, version: int) -> Path:
    """One folder per store, model and version: two stores both have a version 1 of the same name."""
    store = hashlib.sha256(uri.encode()).hexdigest()[:12]
    return cache / store / re.sub(r"[^\w.-]", "_", name) / str(version)


def _download(source: str, uri: str, dest: Path) -> Path:
    """The version's ``hf_model`` artifact directory (its path is in the pyfunc's MLmodel), downloaded once
    (atomically) into ``dest``. Raises KeyError when the model is not the trainer's pyfunc."""
    import mlflow.artifacts

    if (dest / "config.json").is_file():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=dest.parent, prefix=".download-"))
    try:
        root = source.rstrip("/")
        mlmodel = mlflow.artifacts.download_artifacts(
            artifact_uri=f"{root}/MLmodel", dst_path=str(staging / "meta"), tracking_uri=uri
        )
        artifacts: dict[str, Any] = yaml.safe_load(Path(mlmodel).read_text())["flavors"]["python_function"][
            "artifacts"]
        got = mlflow.artifacts.download_artifacts(
            artifact_uri=f"{root}/{artifacts[HF_ARTIFACT]['path']}",
            dst_path=str(staging / "hf"),
            tracking_uri=uri,
        )
        if dest.exists():
            shutil.rmtree(dest)
        Path(got).rename(dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return dest
