"""The shipped mini-repository task set: reading it by split and difficulty, and writing it with a manifest.

One gzip'd JSONL file holds every task, each a RepoTask's JSON plus its ``split``; the manifest beside it
counts the tasks (per split and difficulty, bug kind and template), records the file's sha256 and says how
the set was built and checked. ``scripts/build_minirepos.py`` writes both.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from coding_framework.repotasks.task import RepoTask

SPLITS = ("train", "validation", "test")
DIFFICULTIES = ("easy", "medium", "hard")
DATA_FILE = Path(__file__).parent / "data" / "minirepos.jsonl.gz"
TEMPLATES_DIR = Path(__file__).parent / "minirepos"


class MinirepoError(ValueError):
    """The mini-repository set cannot be read, or was asked for something it does not have."""


def manifest_path(path: Path) -> Path:
    """The manifest beside a data file: ``minirepos.jsonl.gz`` -> ``minirepos_manifest.json``."""
    return path.with_name(path.name.split(".")[0] + "_manifest.json")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def load_minirepos(
    split: str, difficulty: str | None = None, max_distance: int | None = None, path: str | Path | None = None
) -> list[RepoTask]:
    """The tasks of ``split`` (train, validation or test), optionally only one ``difficulty`` and those
    whose bug is at most ``max_distance`` calls from what the issue names. ``path`` defaults to the
    shipped set; its manifest, when present, must match the file."""
    if split not in SPLITS:
        raise MinirepoError(f"unknown split {split!r}: choose one of {', '.join(SPLITS)}")
    if difficulty is not None and difficulty not in DIFFICULTIES:
        raise MinirepoError(f"unknown difficulty {difficulty!r}: choose one of {', '.join(DIFFICULTIES)}")
    if max_distance is not None and max_distance < 0:
        raise MinirepoError(f"max_distance must not be negative, got {max_distance}")
    file = Path(path) if path is not None else DATA_FILE
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise MinirepoError(
            f"{file}: cannot read the task set ({exc.strerror}); build it with scripts/build_minirepos.py"
        ) from None
    manifest = manifest_path(file)
    if manifest.is_file():
        expected = json.loads(manifest.read_text(encoding="utf-8")).get("sha256")
        if expected != _sha256(raw):
            raise MinirepoError(
                f"{file}: does not match {manifest.name}; rebuild with scripts/build_minirepos.py"
            )
    try:
        text = gzip.decompress(raw).decode("utf-8")
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise MinirepoError(f"{file}: not a gzip'd JSONL file ({exc})") from None
    tasks = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            row_split = row.pop("split")
            task = RepoTask.model_validate(row)
        except (json.JSONDecodeError, KeyError, AttributeError, ValidationError) as exc:
            message = str(exc).splitlines()[0]
            raise MinirepoError(f"{file}:{lineno}: not a mini-repository task ({message})") from None
        if row_split != split or (difficulty is not None and task.difficulty != difficulty):
            continue
        if max_distance is None or task.distance <= max_distance:
            tasks.append(task)
    return tasks


def _counts(tasks: Sequence[RepoTask], key: str) -> dict[str, int]:
    return dict(sorted(Counter(str(getattr(t, key)) for t in tasks).items()))


def write_minirepos(
    splits: Mapping[str, Sequence[RepoTask]],
    path: str | Path = DATA_FILE,
    build: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Write the task set (every split, tasks in the given order) and its manifest; return the manifest.
    ``build`` records how the set was made and checked. The file is byte-for-byte reproducible."""
    unknown = sorted(set(splits) - set(SPLITS))
    if unknown:
        raise MinirepoError(f"unknown splits {unknown}: the splits are {', '.join(SPLITS)}")
    file = Path(path)
    lines = [
        json.dumps({"split": split, **task.model_dump(mode="json")}, ensure_ascii=False)
        for split in SPLITS
        for task in splits.get(split, ())
    ]
    data = gzip.compress("".join(line + "\n" for line in lines).encode("utf-8"), mtime=0)
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_bytes(data)
    every = [t for split in SPLITS for t in splits.get(split, ())]
    manifest: dict[str, Any] = {
        "data_file": file.name,
        "sha256": _sha256(data),
        "tasks": len(every),
        "splits": {
            split: {
                "total": len(splits.get(split, ())),
                **{d: 0 for d in DIFFICULTIES},
                **_counts(splits.get(split, ()), "difficulty"),
            }
            for split in SPLITS
        },
        "bug_kinds": _counts(every, "bug_kind"),
        "distances": _counts(every, "distance"),
        "templates": {
            repo.split("/")[-1]: {
                split: sum(1 for t in splits.get(split, ()) if t.repo == repo) for split in SPLITS
            }
            for repo in sorted({t.repo for t in every})
        },
        "build": dict(build or {}),
    }
    manifest_path(file).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


__all__ = [
    "DATA_FILE",
    "DIFFICULTIES",
    "SPLITS",
    "TEMPLATES_DIR",
    "MinirepoError",
    "load_minirepos",
    "manifest_path",
    "write_minirepos",
]
