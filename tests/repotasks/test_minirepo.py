from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from coding_framework.repotasks.generate import load_template
from coding_framework.repotasks.minirepo import (
    DATA_FILE,
    DIFFICULTIES,
    SPLITS,
    TEMPLATES_DIR,
    MinirepoError,
    load_minirepos,
    manifest_path,
    write_minirepos,
)
from coding_framework.repotasks.task import RepoTask
from coding_framework.repotasks.testrun import run_test_files

PATCH = "diff --git a/pkg/m.py b/pkg/m.py\n--- a/pkg/m.py\n+++ b/pkg/m.py\n@@ -1 +1 @@\n-x = 2\n+x = 1\n"


def _task(name: str, distance: int, kind: str = "operator_swap", template: str = "pkg") -> RepoTask:
    return RepoTask(
        instance_id=f"{template}__m__{name}__{kind}_0",
        repo=f"minirepo/{template}",
        problem_statement=f"`{name}()` returns 2 but should return 1.",
        patch=PATCH,
        test_patch="",
        FAIL_TO_PASS=["tests/test_m_hidden.py::test_x"],
        files={"README.md": "# pkg\n", "pkg/m.py": "x = 2\n"},
        difficulty="easy" if distance == 0 else "medium" if distance == 1 else "hard",
        bug_kind=kind,
        distance=distance,
    )


@pytest.fixture()
def written(tmp_path: Path) -> Path:
    path = tmp_path / "minirepos.jsonl.gz"
    splits = {
        "train": [_task("a", 0), _task("b", 1), _task("c", 3, "off_by_one", "other")],
        "validation": [_task("d", 2)],
        "test": [_task("e", 0, "dropped_branch")],
    }
    write_minirepos(splits, path, build={"script": "test"})
    return path


def test_round_trip_and_filters(written: Path) -> None:
    train = load_minirepos("train", path=written)
    assert [t.instance_id for t in train] == [
        "pkg__m__a__operator_swap_0",
        "pkg__m__b__operator_swap_0",
        "other__m__c__off_by_one_0",
    ]
    assert train[0] == _task("a", 0)
    assert [t.instance_id for t in load_minirepos("train", difficulty="medium", path=written)] == [
        "pkg__m__b__operator_swap_0"
    ]
    assert len(load_minirepos("train", max_distance=1, path=written)) == 2
    assert load_minirepos("train", difficulty="hard", max_distance=2, path=written) == []
    assert len(load_minirepos("test", path=written)) == len(load_minirepos("validation", path=written)) == 1


def test_manifest(written: Path) -> None:
    manifest = json.loads(manifest_path(written).read_text())
    assert manifest_path(written).name == "minirepos_manifest.json"
    assert manifest["tasks"] == 5 and manifest["data_file"] == "minirepos.jsonl.gz"
    assert manifest["splits"]["train"] == {"total": 3, "easy": 1, "medium": 1, "hard": 1}
    assert manifest["splits"]["validation"] == {"total": 1, "easy": 0, "medium": 0, "hard": 1}
    assert manifest["bug_kinds"] == {"dropped_branch": 1, "off_by_one": 1, "operator_swap": 3}
    assert manifest["templates"] == {
        "other": {"train": 1, "validation": 0, "test": 0},
        "pkg": {"train": 2, "validation": 1, "test": 1},
    }
    assert manifest["build"] == {"script": "test"}


def test_writing_is_reproducible(written: Path, tmp_path: Path) -> None:
    again = tmp_path / "again" / "minirepos.jsonl.gz"
    splits = {name: load_minirepos(name, path=written) for name in ("train", "validation", "test")}
    write_minirepos(splits, again, build={"script": "test"})
    assert again.read_bytes() == written.read_bytes()


def test_errors(written: Path, tmp_path: Path) -> None:
    with pytest.raises(MinirepoError, match="unknown split 'dev': choose one of train, validation, test"):
        load_minirepos("dev", path=written)
    with pytest.raises(MinirepoError, match="unknown difficulty 'tricky'"):
        load_minirepos("train", difficulty="tricky", path=written)
    with pytest.raises(MinirepoError, match="max_distance must not be negative"):
        load_minirepos("train", max_distance=-1, path=written)
    with pytest.raises(MinirepoError, match="cannot read the task set"):
        load_minirepos("train", path=tmp_path / "missing.jsonl.gz")
    with pytest.raises(MinirepoError, match="unknown splits"):
        write_minirepos({"dev": []}, tmp_path / "x.jsonl.gz")
    tampered = gzip.decompress(written.read_bytes()).replace(b"returns 2", b"returns 3")
    written.write_bytes(gzip.compress(tampered))
    with pytest.raises(MinirepoError, match=r"does not match minirepos_manifest\.json"):
        load_minirepos("train", path=written)
    manifest_path(written).unlink()
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(gzip.compress(b'{"split": "train", "instance_id": ""}\n'))
    with pytest.raises(MinirepoError, match=r"bad.jsonl.gz:1: not a mini-repository task"):
        load_minirepos("train", path=bad)


def test_the_shipped_set(tmp_path: Path) -> None:
    manifest = json.loads(manifest_path(DATA_FILE).read_text())
    splits = {name: load_minirepos(name) for name in SPLITS}
    groups: dict[str, set[str]] = {}
    snapshots: set[str] = set()
    for name, tasks in splits.items():
        assert len(tasks) == manifest["splits"][name]["total"] > 0
        for difficulty in DIFFICULTIES:
            assert len(load_minirepos(name, difficulty=difficulty)) == manifest["splits"][name][difficulty]
        groups[name] = {f"{t.repo}::{t.instance_id.split('__')[2]}" for t in tasks}
        for task in tasks:
            snapshots.add(json.dumps(task.files, sort_keys=True))
            assert task.FAIL_TO_PASS and "assert" not in task.problem_statement
            assert not [p for p in task.files if "_hidden" in p]
    assert len(snapshots) == manifest["tasks"] == sum(len(t) for t in splits.values())
    assert not groups["train"] & groups["validation"] and not groups["train"] & groups["test"]
    assert not groups["validation"] & groups["test"]
    # One task per template of the test split, run: the bug fails its tests and the gold patch fixes it.
    firsts = {t.repo: t for t in reversed(splits["test"])}
    for number, task in enumerate(sorted(firsts.values(), key=lambda t: t.instance_id)):
        hidden = task.hidden_files()
        for label, files in (("bug", task.files), ("fix", task.fixed_files())):
            root = tmp_path / f"{label}{number}"
            for path, text in {**files, **hidden}.items():
                (root / path).parent.mkdir(parents=True, exist_ok=True)
                (root / path).write_text(text)
            results = run_test_files(str(root), sorted(hidden))
            passed = {t for t, r in results.items() if r["passed"]}
            if label == "bug":
                assert not passed & set(task.FAIL_TO_PASS) and set(task.PASS_TO_PASS) <= passed
            else:
                assert set(task.FAIL_TO_PASS) | set(task.PASS_TO_PASS) <= passed


def test_the_shipped_set_is_built_from_the_templates_as_they_are() -> None:
    built = json.loads(manifest_path(DATA_FILE).read_text())["build"]["template_sha256"]
    templates = sorted(p for p in TEMPLATES_DIR.iterdir() if (p / "hidden").is_dir())
    current = {t.name: t.digest() for t in map(load_template, templates)}
    assert current == built, "a template changed: rebuild with scripts/build_minirepos.py"
