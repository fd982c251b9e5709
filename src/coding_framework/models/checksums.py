"""Checksums of a model directory: what names a version and what the registry attests.

``weights_checksum`` covers ``config.json`` and every weight file (the base and each adapter's tensors);
``adapter_checksums`` gives each adapter's tensors alone (the registry's ``adapter_sha256.<name>`` tags);
``version_checksum`` extends the weights' checksum by each adapter's name and canonical peft config, since
rank and alpha change what an adapter computes.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from coding_framework.models.layout import ADAPTER_CONFIG, ADAPTER_FILE, ADAPTERS_DIR

__all__ = [
    "WEIGHT_SUFFIXES", "adapter_checksums", "adapter_config_bytes", "version_checksum", "weight_files",
    "weights_checksum",
]

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")
_CHUNK = 1 << 20
# What peft writes about where an adapter was made, not what it computes.
_VOLATILE = ("base_model_name_or_path", "revision", "peft_version", "inference_mode")


def weight_files(model_dir: str | Path) -> list[Path]:
    """``config.json`` and every weight file under ``model_dir``, in a fixed (sorted relative path) order."""
    root = Path(model_dir)
    files = [p for p in root.rglob("*") if p.is_file() and p.suffix in WEIGHT_SUFFIXES]
    if (root / "config.json").is_file():
        files.append(root / "config.json")
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())


def weights_checksum(model_dir: str | Path) -> str:
    """sha256 hex over each file's relative path and bytes (``weight_files``); ValueError without weights."""
    root = Path(model_dir)
    files = weight_files(root)
    if not any(p.suffix in WEIGHT_SUFFIXES for p in files):
        raise ValueError(f"{root} holds no weight files ({', '.join(WEIGHT_SUFFIXES)}); is it a model dir?")
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        with path.open("rb") as fh:
            while chunk := fh.read(_CHUNK):
                digest.update(chunk)
        digest.update(b"\0")
    return digest.hexdigest()


def adapter_checksums(model_dir: Path) -> dict[str, str]:
    """sha256 of each ``adapters/<name>/adapter_model.safetensors`` a model directory holds, by name."""
    root = model_dir / ADAPTERS_DIR
    files = sorted(root.glob(f"*/{ADAPTER_FILE}")) if root.is_dir() else []
    return {f.parent.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in files}


def adapter_config_bytes(path: Path) -> bytes:
    """An adapter's peft config in a canonical form: what it computes, without where it was made (peft
    writes the base's path, its own version, and ``target_modules`` in set order, which varies by run)."""
    config = json.loads((path / ADAPTER_CONFIG).read_text())
    for key in _VOLATILE:
        config.pop(key, None)
    if isinstance(config.get("target_modules"), list):
        config["target_modules"] = sorted(config["target_modules"])
    return json.dumps(config, sort_keys=True).encode()


def version_checksum(model_dir: Path, adapters: dict[str, str]) -> str:
    """``weights_checksum`` (base and adapter tensors), extended by each adapter's name, tensors' sha256 and
    canonical config; unchanged for a model without adapters. ``adapters``: name -> tensors' sha256."""
    weights = weights_checksum(model_dir)
    if not adapters:
        return weights
    digest = hashlib.sha256(weights.encode())
    for name, sha in sorted(adapters.items()):
        config = hashlib.sha256(adapter_config_bytes(model_dir / ADAPTERS_DIR / name)).hexdigest()
        digest.update(f"\0{name}\0{sha}\0{config}".encode())
    return digest.hexdigest()
