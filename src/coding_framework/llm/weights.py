"""A checksum of a model's weights: what names a served version and what the registry attests."""

from __future__ import annotations

import hashlib
from pathlib import Path

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")
_CHUNK = 1 << 20


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
