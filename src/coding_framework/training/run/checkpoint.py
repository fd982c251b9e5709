"""Atomic, verified training checkpoints: a partial or corrupted checkpoint is never loaded.

Layout: ``<root>/step-000010/`` holds whatever the trainer writes (model, optimizer, RNG states, ...) plus
``manifest.json``, listing every file with its size and SHA-256. A checkpoint is written into a hidden
temporary directory, every file and the directory are fsynced, the manifest is written last, and only
then is the directory renamed into place (an atomic rename on one filesystem). Loading checks the
manifest against the files and falls back to the next older checkpoint when one does not verify;
``latest_and_rejected`` also says which were skipped, naming the file at fault, for the trainer to report.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coding_framework.logs import get_logger

log = get_logger(__name__)

MANIFEST = "manifest.json"
FORMAT = 1
_NAME = re.compile(r"^step-(\d{6,})$")


__all__ = ["MANIFEST", "Checkpoint", "CheckpointError", "CheckpointManager", "Rejected", "verify"]


class CheckpointError(RuntimeError):
    """A checkpoint is missing, incomplete or corrupted; the message says which file and why, ``file`` is
    that file and ``reason`` the why alone."""

    def __init__(self, file: Path, reason: str) -> None:
        super().__init__(f"{file}: {reason}")
        self.file = file
        self.reason = reason


@dataclass(frozen=True)
class Checkpoint:
    step: int
    path: Path
    manifest: dict[str, Any]


@dataclass(frozen=True)
class Rejected:
    """A checkpoint that did not verify: its directory, the file at fault and why."""

    path: Path
    file: Path
    reason: str


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _fsync_file(path: Path) -> None:
    with open(path, "rb") as fh:
        os.fsync(fh.fileno())


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name != MANIFEST)


def verify(path: Path) -> dict[str, Any]:
    """The manifest of the checkpoint at ``path``, after checking every file against it."""
    manifest_path = path / MANIFEST
    if not manifest_path.is_file():
        raise CheckpointError(manifest_path, "missing (the checkpoint was not finished)")
    try:
        manifest = json.loads(manifest_path.read_text())
        files: dict[str, dict[str, Any]] = manifest["files"]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise CheckpointError(manifest_path, f"unreadable manifest ({exc})") from None
    present = {p.relative_to(path).as_posix() for p in _files(path)}
    if missing := sorted(set(files) - present):
        raise CheckpointError(path / missing[0], f"listed in the manifest, missing (all missing: {missing})")
    if extra := sorted(present - set(files)):
        raise CheckpointError(path / extra[0], f"not in the manifest (all unlisted: {extra})")
    for name, meta in files.items():
        file = path / name
        if file.stat().st_size != meta["size"] or _sha256(file) != meta["sha256"]:
            raise CheckpointError(file, "size or checksum does not match the manifest (corrupted)")
    return manifest


class CheckpointManager:
    """Writes ``step-NNNNNN`` checkpoints under ``root`` atomically and keeps the newest ``keep_last``."""

    def __init__(self, root: str | Path, keep_last: int = 3) -> None:
        if keep_last < 1:
            raise ValueError(f"keep_last must be at least 1, got {keep_last}")
        self.root = Path(root)
        self.keep_last = keep_last

    def path_for(self, step: int) -> Path:
        return self.root / f"step-{step:06d}"

    def save(
        self, step: int, write: Callable[[Path], None], meta: dict[str, Any] | None = None
    ) -> Checkpoint:
        """``write(tmp_dir)`` fills a new checkpoint, then it is sealed (manifest) and moved into place."""
        self.root.mkdir(parents=True, exist_ok=True)
        final = self.path_for(step)
        tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{final.name}-", dir=self.root))
        try:
            write(tmp)
            files = {}
            for file in _files(tmp):
                _fsync_file(file)
                files[file.relative_to(tmp).as_posix()] = {
                    "size": file.stat().st_size,
                    "sha256": _sha256(file),
                }
            for sub in sorted({p.parent for p in _files(tmp)}, key=lambda p: -len(p.parts)):
                _fsync_dir(sub)
            manifest = {"format": FORMAT, "step": step, "files": files, "meta": meta or {}}
            (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True))
            _fsync_file(tmp / MANIFEST)
            _fsync_dir(tmp)
            if final.exists():  # a re-run of a step after a resume replaces its own earlier checkpoint
                shutil.rmtree(final)
            tmp.rename(final)
            _fsync_dir(self.root)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        self._prune()
        log.info("checkpoint_saved", step=step, path=str(final))
        return Checkpoint(step, final, manifest)

    def steps(self) -> list[int]:
        """Steps of the sealed-looking checkpoint directories, oldest first (not yet verified)."""
        if not self.root.is_dir():
            return []
        found = (_NAME.match(p.name) for p in self.root.iterdir() if p.is_dir())
        return sorted(int(m.group(1)) for m in found if m)

    def latest(self) -> Checkpoint | None:
        """The newest checkpoint that verifies; broken ones are skipped with a warning."""
        return self.latest_and_rejected()[0]

    def latest_and_rejected(self) -> tuple[Checkpoint | None, list[Rejected]]:
        """The newest checkpoint that verifies (None: none does), and the newer ones that did not."""
        rejected: list[Rejected] = []
        for step in reversed(self.steps()):
            path = self.path_for(step)
            try:
                return Checkpoint(step, path, verify(path)), rejected
            except CheckpointError as exc:
                rejected.append(Rejected(path, exc.file, exc.reason))
            except OSError as exc:
                rejected.append(Rejected(path, Path(exc.filename or path), exc.strerror or str(exc)))
            log.warning("checkpoint_rejected", path=str(path), file=str(rejected[-1].file),
                        reason=rejected[-1].reason)
        return None, rejected

    def _prune(self) -> None:
        for step in self.steps()[: -self.keep_last]:
            shutil.rmtree(self.path_for(step), ignore_errors=True)
        for stale in self.root.glob(".tmp-step-*"):  # left behind by a killed writer
            shutil.rmtree(stale, ignore_errors=True)
