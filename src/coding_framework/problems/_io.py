"""Reading benchmark records from local JSON files or the Hugging Face hub, with clear errors."""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:
    from coding_framework.problems.problem import Problem

HUB_URL = "https://huggingface.co"
_TRUTHY = {"1", "true", "yes", "on"}


class ProblemLoadError(ValueError):
    """A benchmark source could not be read; the message names the file and line, or says what to pass."""


@dataclass(frozen=True)
class Record:
    """One JSON object from a benchmark file, with where it came from (for error messages)."""

    data: dict[str, Any]
    where: str

    def field(self, key: str, kind: type | tuple[type, ...] = str) -> Any:
        if key not in self.data:
            raise ProblemLoadError(f"{self.where}: missing field {key!r}")
        value = self.data[key]
        if not isinstance(value, kind):
            raise ProblemLoadError(
                f"{self.where}: field {key!r} should be {_kind_name(kind)}, got {type(value).__name__}"
            )
        return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(k.__name__ for k in kinds)


def read_records(path: Path) -> list[Record]:
    """Objects of a ``.jsonl``, ``.jsonl.gz`` or ``.json`` (one list, or one object per line) file."""
    try:
        raw = path.read_bytes()
        text = (gzip.decompress(raw) if path.name.endswith(".gz") else raw).decode("utf-8")
    except (OSError, UnicodeDecodeError, EOFError) as exc:
        raise ProblemLoadError(f"{path}: cannot read the file: {exc}") from exc
    parse = _json_list if text.lstrip().startswith("[") else _json_lines
    records = list(parse(text, path))
    if not records:
        raise ProblemLoadError(f"{path}: the file holds no records")
    return records


def _json_lines(text: str, path: Path) -> Iterable[Record]:
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ProblemLoadError(f"{path}:{lineno}: invalid JSON: {exc.msg} (column {exc.colno})") from exc
        yield _as_record(obj, f"{path}:{lineno}")


def _json_list(text: str, path: Path) -> Iterable[Record]:
    """Decode a JSON list element by element so each record knows its line."""
    decoder = json.JSONDecoder()
    pos = text.index("[") + 1
    while True:
        pos = _skip_space(text, pos)
        if pos < len(text) and text[pos] == "]":
            return
        lineno = text.count("\n", 0, pos) + 1
        try:
            obj, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise ProblemLoadError(
                f"{path}:{exc.lineno}: invalid JSON: {exc.msg} (column {exc.colno})"
            ) from exc
        yield _as_record(obj, f"{path}:{lineno}")
        pos = _skip_space(text, pos)
        if pos < len(text) and text[pos] == ",":
            pos += 1
        elif pos >= len(text) or text[pos] != "]":
            line = text.count("\n", 0, pos) + 1
            raise ProblemLoadError(f"{path}:{line}: invalid JSON: expected ',' or ']' after a record")


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _as_record(obj: object, where: str) -> Record:
    if not isinstance(obj, dict):
        raise ProblemLoadError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    return Record(obj, where)


def find_file(folder: Path, names: tuple[str, ...]) -> Path:
    """The first of ``names`` present in ``folder``."""
    for name in names:
        if (folder / name).is_file():
            return folder / name
    raise ProblemLoadError(f"{folder}: no benchmark file found; expected one of {', '.join(names)}")


def local_path(source: str | Path) -> Path:
    path = Path(source).expanduser()
    if not path.exists():
        raise ProblemLoadError(f"{path}: no such file or folder")
    return path


def hub_records(dataset: str, config: str | None, example_file: str) -> list[Record]:
    """All rows of every split of a hub dataset; a clear error when the hub cannot be reached."""
    hint = f"pass a local path to the benchmark file instead (e.g. source='data/{example_file}')"
    if any(os.environ.get(v, "").lower() in _TRUTHY for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")):
        raise ProblemLoadError(
            f"cannot fetch {dataset!r}: Hugging Face offline mode is on (HF_HUB_OFFLINE); {hint}"
        )
    if not _hub_reachable():
        raise ProblemLoadError(f"cannot reach the Hugging Face hub ({HUB_URL}) to fetch {dataset!r}; {hint}")
    import datasets  # heavy import, only needed for hub sources

    try:
        splits = datasets.load_dataset(dataset, config)
    except Exception as exc:  # datasets raises many unrelated types for network, auth and format errors
        raise ProblemLoadError(f"cannot load {dataset!r} from the Hugging Face hub: {exc}; {hint}") from exc
    where = f"hf:{dataset}" + (f"[{config}]" if config else "")
    return [
        Record(dict(row), f"{where}/{name}#{i}")
        for name, split in splits.items()
        for i, row in enumerate(split)
    ]


def _hub_reachable(timeout_s: float = 5.0) -> bool:
    try:
        httpx.head(HUB_URL, timeout=timeout_s)
    except httpx.HTTPError:
        return False
    return True


def check_unique(problems: list[Problem], records: list[Record]) -> None:
    """Raise on the first repeated task_id, naming the record that repeats it."""
    seen: set[str] = set()
    for problem, record in zip(problems, records, strict=True):
        if problem.task_id in seen:
            raise ProblemLoadError(f"{record.where}: duplicate task_id {problem.task_id!r}")
        seen.add(problem.task_id)
