"""SWE-bench instances (Jimenez et al. 2024) from the official JSONL rows, over local repository snapshots.

:func:`load_swebench` reads the row format published on the Hugging Face hub (``princeton-nlp/SWE-bench``,
``SWE-bench_Lite``, ``SWE-bench_Verified``): one JSON object per line with ``repo``, ``instance_id``,
``base_commit``, ``patch``, ``test_patch``, ``problem_statement``, ``hints_text``, ``created_at``,
``version``, ``FAIL_TO_PASS``, ``PASS_TO_PASS`` and ``environment_setup_commit``. The hub stores
``FAIL_TO_PASS`` and ``PASS_TO_PASS`` as JSON-encoded strings of lists; real lists are accepted too.
``hints_text``, ``created_at`` and ``environment_setup_commit`` may be absent and are not kept: the agent
sees the problem statement only, as in SWE-bench's standard setting.

The loader fetches nothing (SWE-bench's repositories cannot be cloned offline): each instance's repository
at ``base_commit`` comes from a folder under ``repos_dir``, ``<instance_id>/`` or else
``<owner>__<name>__<base_commit[:7]>/`` (one checkout that instances sharing a base commit can share), made
elsewhere with e.g. ``git archive <base_commit>``. Its text files become the task's ``files``; ``.git``,
symbolic links, binary files and files over 1 MB are left out.
An instance loads only when its ``test_patch`` and gold ``patch`` both apply to that snapshot.

Difficulty follows the gold patch's size, in lines it adds or removes: at most 5 is easy, at most 20
medium, more hard.

Grading a real SWE-bench instance needs its per-instance Docker image (the repository's environment at the
instance's ``version``, as SWE-bench's harness builds it); the project's Docker sandbox backend is the path
for that, and those images cannot be fetched here.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import whatthepatch
from pydantic import ValidationError

from coding_framework.logs import get_logger
from coding_framework.problems.problem import Difficulty
from coding_framework.repotasks.task import PatchError, RepoTask, apply_patch

log = get_logger(__name__)

_TEXT_FIELDS = ("repo", "instance_id", "base_commit", "patch", "test_patch", "problem_statement", "version")
_TEST_FIELDS = ("FAIL_TO_PASS", "PASS_TO_PASS")
MAX_FILE_BYTES = 1_000_000
EASY_MAX_LINES = 5
MEDIUM_MAX_LINES = 20


class SwebenchLoadError(ValueError):
    """A SWE-bench file or instance that cannot be loaded; the message names the file and line."""


def load_swebench(path: str | Path, repos_dir: str | Path) -> list[RepoTask]:
    """The instances of the SWE-bench JSONL file ``path``, in file order, each over its snapshot in
    ``repos_dir`` (see the module docstring)."""
    path, repos_dir = Path(path).expanduser(), Path(repos_dir).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SwebenchLoadError(f"{path}: cannot read the file: {exc}") from None
    tasks: list[RepoTask] = []
    seen: set[str] = set()
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        task = _task(_row(line, where), where, repos_dir)
        if task.instance_id in seen:
            raise SwebenchLoadError(f"{where}: duplicate instance_id {task.instance_id!r}")
        seen.add(task.instance_id)
        tasks.append(task)
    if not tasks:
        raise SwebenchLoadError(f"{path}: the file holds no instances")
    return tasks


def _row(line: str, where: str) -> dict[str, Any]:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise SwebenchLoadError(f"{where}: invalid JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(row, dict):
        raise SwebenchLoadError(f"{where}: expected a JSON object, got {type(row).__name__}")
    missing = [key for key in (*_TEXT_FIELDS, *_TEST_FIELDS) if key not in row]
    if missing:
        raise SwebenchLoadError(f"{where}: missing field{'s' * (len(missing) > 1)} {', '.join(missing)}")
    for key in _TEXT_FIELDS:
        if not isinstance(row[key], str):
            raise SwebenchLoadError(
                f"{where}: field {key!r} should be a string, got {type(row[key]).__name__}"
            )
    return row


def _tests(row: dict[str, Any], key: str, where: str) -> list[str]:
    value = row[key]
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise SwebenchLoadError(f"{where}: {key} is a string but not JSON: {exc.msg}") from None
    if not isinstance(value, list) or not all(isinstance(test, str) for test in value):
        raise SwebenchLoadError(
            f"{where}: {key} should be a list of test names (strings), or a JSON string of one"
        )
    return value


def _task(row: dict[str, Any], where: str, repos_dir: Path) -> RepoTask:
    instance_id = row["instance_id"]
    if instance_id in ("", ".", "..") or "/" in instance_id or "\\" in instance_id:
        raise SwebenchLoadError(f"{where}: instance_id {instance_id!r} is not a plain name")
    fail_to_pass = _tests(row, "FAIL_TO_PASS", where)
    if not fail_to_pass:
        raise SwebenchLoadError(
            f"{where}: {instance_id}: FAIL_TO_PASS is empty; an instance needs a test to fix"
        )
    snapshot = _snapshot_dir(row, where, repos_dir)
    files = _read_snapshot(snapshot, instance_id, where)
    for key in ("test_patch", "patch"):
        try:
            patched = apply_patch(files, row[key])
        except (PatchError, whatthepatch.exceptions.WhatThePatchException) as exc:
            raise SwebenchLoadError(
                f"{where}: {instance_id}: the {key} does not apply to the snapshot {snapshot}: {exc}"
            ) from None
        if patched == files:
            raise SwebenchLoadError(f"{where}: {instance_id}: the {key} changes no file of the snapshot")
    try:
        return RepoTask(
            instance_id=instance_id,
            repo=row["repo"],
            problem_statement=row["problem_statement"],
            patch=row["patch"],
            test_patch=row["test_patch"],
            FAIL_TO_PASS=fail_to_pass,
            PASS_TO_PASS=_tests(row, "PASS_TO_PASS", where),
            files=files,
            base_commit=row["base_commit"],
            version=row["version"],
            source="swebench",
            difficulty=_difficulty(row["patch"]),
        )
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"])
        raise SwebenchLoadError(
            f"{where}: {instance_id}: {field + ': ' if field else ''}{error['msg']}"
        ) from None


def _snapshot_dir(row: dict[str, Any], where: str, repos_dir: Path) -> Path:
    instance_id, repo, base_commit = row["instance_id"], row["repo"], row["base_commit"]
    candidates = (repos_dir / instance_id, repos_dir / f"{repo.replace('/', '__')}__{base_commit[:7]}")
    for folder in candidates:
        if folder.is_dir():
            return folder
    raise SwebenchLoadError(
        f"{where}: {instance_id}: no snapshot of {repo} at {base_commit[:7] or '(no base_commit)'}: "
        f"looked for {candidates[0]} and {candidates[1]}; SWE-bench repositories cannot be fetched here, "
        "so put a checkout at base_commit in one of them"
    )


def _read_snapshot(root: Path, instance_id: str, where: str) -> dict[str, str]:
    """The text files under ``root`` by relative POSIX path (symbolic links are never followed)."""
    files: dict[str, str] = {}
    skipped: Counter[str] = Counter()
    try:
        for dirpath, dirnames, filenames in os.walk(root):
            folder = Path(dirpath)
            links = [d for d in dirnames if (folder / d).is_symlink()]
            skipped["links"] += len(links)
            dirnames[:] = sorted(d for d in dirnames if d != ".git" and d not in links)
            for name in sorted(filenames):
                file = folder / name
                if name == ".git":  # a worktree's or submodule's pointer to its git folder
                    continue
                if file.is_symlink():
                    skipped["links"] += 1
                    continue
                if not file.is_file():
                    skipped["special"] += 1
                    continue
                if file.stat().st_size > MAX_FILE_BYTES:
                    skipped["large"] += 1
                    continue
                text = _text(file.read_bytes())
                if text is None:
                    skipped["binary"] += 1
                    continue
                files[file.relative_to(root).as_posix()] = text
    except OSError as exc:
        raise SwebenchLoadError(f"{where}: {instance_id}: cannot read the snapshot {root}: {exc}") from None
    log.debug(
        "swebench_snapshot",
        instance_id=instance_id,
        folder=str(root),
        files=len(files),
        skipped_binary=skipped["binary"],
        skipped_large=skipped["large"],
        skipped_links=skipped["links"],
        skipped_special=skipped["special"],
    )
    return files


def _text(data: bytes) -> str | None:
    """``data`` as text, or None when it is binary (a NUL byte, or not UTF-8)."""
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _difficulty(patch: str) -> Difficulty:
    """By the lines the gold patch (already known to parse) adds or removes."""
    lines = sum(
        (change.old is None) != (change.new is None)
        for diff in whatthepatch.parse_patch(patch)
        for change in diff.changes or []
    )
    if lines <= EASY_MAX_LINES:
        return "easy"
    return "medium" if lines <= MEDIUM_MAX_LINES else "hard"


__all__ = ["EASY_MAX_LINES", "MAX_FILE_BYTES", "MEDIUM_MAX_LINES", "SwebenchLoadError", "load_swebench"]
