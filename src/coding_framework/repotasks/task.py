"""A repository task in SWE-bench's shape: a repository snapshot, an issue, a gold patch and hidden tests.

The repository is a directory snapshot held as ``files`` (relative path -> text), with no git history, so
no fix can leak through it. ``patch`` (the gold fix, non-test files only) and ``test_patch`` (the hidden
tests) are unified diffs, as in SWE-bench; ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` name hidden tests as
``path::test_name``. The hidden tests are trusted data: they never enter the agent's copy.
"""

from __future__ import annotations

from typing import Literal

import whatthepatch
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from coding_framework.problems.problem import Difficulty

RepoTaskSource = Literal["minirepo", "swebench"]


class PatchError(ValueError):
    """A unified diff that does not apply to the files it names."""


def apply_patch(files: dict[str, str], patch: str) -> dict[str, str]:
    """``files`` with ``patch`` (a unified diff, git or plain) applied; new files are created, deleted files
    removed. Raises PatchError when a hunk does not match."""
    out = dict(files)
    for diff in whatthepatch.parse_patch(patch):
        header = diff.header
        if header is None:
            continue
        old, new = _strip(header.old_path), _strip(header.new_path)
        if new is None:
            out.pop(old or "", None)
            continue
        lines = out.get(old or "", "").splitlines() if old else []
        try:
            result = whatthepatch.apply_diff(diff, lines)
        except whatthepatch.exceptions.HunkApplyException as exc:
            raise PatchError(f"{new}: the patch does not apply ({exc})") from None
        if old and old != new:
            out.pop(old, None)
        out[new] = "\n".join(result) + "\n" if result else ""
    return out


def _strip(path: str | None) -> str | None:
    if path is None or path == "/dev/null":
        return None
    return path[2:] if path.startswith(("a/", "b/")) else path


class RepoTask(BaseModel):
    """One repository task. The upper-case fields keep SWE-bench's names so its JSONL loads unchanged."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    instance_id: str = Field(min_length=1)
    repo: str = Field(min_length=1, description="The repository's name (owner/name for SWE-bench).")
    problem_statement: str = Field(min_length=1, description="The issue: what the agent is told.")
    patch: str = Field(description="The gold fix as a unified diff of non-test files.")
    test_patch: str = Field(description="The hidden tests as a unified diff.")
    FAIL_TO_PASS: list[str] = Field(min_length=1, description="Hidden tests the fix must make pass.")
    PASS_TO_PASS: list[str] = Field(default_factory=list, description="Hidden tests that must keep passing.")
    files: dict[str, str] = Field(description="The repository before the fix: relative path -> text.")
    base_commit: str = ""
    version: str = ""
    source: RepoTaskSource = "minirepo"
    difficulty: Difficulty = "medium"
    bug_kind: str = Field("", description="Mini-repositories: the injected bug's kind.")
    distance: int = Field(0, ge=0, description="Calls between the failing tests' function and the bug.")

    @field_validator("files")
    @classmethod
    def _relative(cls, files: dict[str, str]) -> dict[str, str]:
        for path in files:
            parts = path.split("/")
            if path.startswith("/") or ".." in parts or "" in parts or "\\" in path:
                raise ValueError(f"repository paths must be relative and plain, got {path!r}")
        return files

    @model_validator(mode="after")
    def _tests_named(self) -> RepoTask:
        overlap = set(self.FAIL_TO_PASS) & set(self.PASS_TO_PASS)
        if overlap:
            raise ValueError(f"tests both in FAIL_TO_PASS and PASS_TO_PASS: {sorted(overlap)}")
        return self

    def hidden_files(self) -> dict[str, str]:
        """The files ``test_patch`` adds or changes, after applying it to the snapshot (trusted)."""
        patched = apply_patch(self.files, self.test_patch)
        return {p: t for p, t in patched.items() if self.files.get(p) != t}

    def fixed_files(self) -> dict[str, str]:
        """The snapshot with the gold patch applied."""
        return apply_patch(self.files, self.patch)


__all__ = ["PatchError", "RepoTask", "RepoTaskSource", "apply_patch"]
