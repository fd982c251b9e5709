"""An episode's private, writable copy of a repository snapshot, held in memory.

The agent's tools read and change this copy only. Nothing in it ever runs on the host: every test run
copies it into a fresh sandbox (``grading.repository.program_for``), so a path can name nothing outside
the copy and no file the agent writes can reach the host's interpreter. Git history is never part of it.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import PurePosixPath

MAX_FILE_BYTES = 200_000
MAX_FILES = 500


class WorkspaceError(ValueError):
    """A tool's request the workspace refuses (a bad path, a missing file, an ambiguous replacement)."""


def clean_path(path: str) -> str:
    """``path`` as a plain relative POSIX path inside the repository; WorkspaceError otherwise."""
    if not isinstance(path, str) or not path.strip():
        raise WorkspaceError("a path is required")
    raw = path.strip().replace("\\", "/")
    parts = [p for p in PurePosixPath(raw).parts if p not in (".", "/")]
    if raw.startswith("/") or ".." in parts:
        raise WorkspaceError(f"{path!r} is outside the repository: use a path relative to its root")
    if parts and parts[0] == ".git":
        raise WorkspaceError("the repository has no git history")
    return "/".join(parts)


class Workspace:
    """Path -> text for every file of the copy, starting from ``files`` (the task's snapshot)."""

    def __init__(self, files: Mapping[str, str]) -> None:
        self.original = dict(files)
        self.files = dict(files)

    def list(self, directory: str = "") -> list[str]:
        prefix = clean_path(directory) + "/" if directory.strip() not in ("", ".", "/") else ""
        found = sorted(p for p in self.files if p.startswith(prefix))
        if prefix and not found:
            raise WorkspaceError(f"no directory {directory!r}")
        return found

    def read(self, path: str, start: int | None = None, end: int | None = None) -> str:
        """The file's lines ``start``..``end`` (1-based, inclusive), each prefixed with its number."""
        lines = self._text(path).splitlines()
        first = max(1, start or 1)
        last = min(len(lines), end if end is not None else len(lines))
        if lines and first > len(lines):
            raise WorkspaceError(f"{path} has {len(lines)} lines; line {first} does not exist")
        return "\n".join(f"{n:>4} {lines[n - 1]}" for n in range(first, last + 1))

    def replace(self, path: str, old: str, new: str) -> int:
        """Replace the one occurrence of ``old`` in ``path`` with ``new``; returns the line it starts on."""
        text = self._text(path)
        if not old:
            raise WorkspaceError("`old` must not be empty")
        count = text.count(old)
        if count != 1:
            raise WorkspaceError(f"`old` occurs {count} times in {path}; it must occur exactly once "
                                 "(include more surrounding lines)")
        at = text.index(old)
        self.write(path, text[:at] + new + text[at + len(old):])
        return text[:at].count("\n") + 1

    def write(self, path: str, content: str) -> None:
        key = clean_path(path)
        if not isinstance(content, str):
            raise WorkspaceError("`content` must be text")
        if len(content.encode()) > MAX_FILE_BYTES:
            raise WorkspaceError(f"{path}: files are limited to {MAX_FILE_BYTES} bytes")
        if key not in self.files and len(self.files) >= MAX_FILES:
            raise WorkspaceError(f"the repository is limited to {MAX_FILES} files")
        self.files[key] = content

    def changed(self) -> dict[str, str | None]:
        """Path -> new text (None: deleted) for every file that differs from the snapshot."""
        paths = set(self.original) | set(self.files)
        return {p: self.files.get(p) for p in sorted(paths) if self.original.get(p) != self.files.get(p)}

    def diff(self) -> str:
        """The changes as a unified diff (what the Reviewer reads)."""
        out: list[str] = []
        for path, new in self.changed().items():
            old = self.original.get(path)
            out += difflib.unified_diff(
                (old or "").splitlines(True), (new or "").splitlines(True),
                f"a/{path}" if old is not None else "/dev/null",
                f"b/{path}" if new is not None else "/dev/null",
            )
        return "".join(line if line.endswith("\n") else line + "\n" for line in out)

    def _text(self, path: str) -> str:
        key = clean_path(path)
        if key not in self.files:
            raise WorkspaceError(f"no file {path!r} (list_files shows what exists)")
        return self.files[key]


__all__ = ["MAX_FILES", "MAX_FILE_BYTES", "Workspace", "WorkspaceError", "clean_path"]
