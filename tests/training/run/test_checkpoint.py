"""Checkpoints are written atomically, verified against their manifest, pruned, and never loaded broken."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coding_framework.training.run.checkpoint import MANIFEST, CheckpointError, CheckpointManager, verify


def _writer(payload: str):
    def write(out: Path) -> None:
        (out / "weights.bin").write_bytes(payload.encode() * 100)
        (out / "sub").mkdir()
        (out / "sub" / "state.json").write_text(json.dumps({"payload": payload}))

    return write


def test_save_seals_a_manifest_with_every_file(tmp_path: Path) -> None:
    ckpt = CheckpointManager(tmp_path).save(3, _writer("a"), meta={"algorithm": "grpo"})
    assert ckpt.path == tmp_path / "step-000003"
    manifest = json.loads((ckpt.path / MANIFEST).read_text())
    assert sorted(manifest["files"]) == ["sub/state.json", "weights.bin"]
    assert manifest["step"] == 3 and manifest["meta"] == {"algorithm": "grpo"}
    assert verify(ckpt.path) == manifest
    assert not list(tmp_path.glob(".tmp-*"))


def test_a_failed_write_leaves_no_checkpoint(tmp_path: Path) -> None:
    manager = CheckpointManager(tmp_path)

    def crash(out: Path) -> None:
        (out / "weights.bin").write_bytes(b"half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        manager.save(1, crash)
    assert manager.steps() == [] and manager.latest() is None
    assert not list(tmp_path.glob(".tmp-*"))


def test_keep_last_prunes_older_checkpoints(tmp_path: Path) -> None:
    manager = CheckpointManager(tmp_path, keep_last=2)
    for step in (1, 2, 3, 4):
        manager.save(step, _writer(str(step)))
    assert manager.steps() == [3, 4]


@pytest.mark.parametrize(
    ("damage", "at_fault"),
    [
        (lambda p: (p / "weights.bin").write_bytes(b"flipped" * 100), "weights.bin"),  # other bytes
        (lambda p: (p / "sub" / "state.json").unlink(), "sub/state.json"),  # a file missing
        (lambda p: (p / MANIFEST).unlink(), MANIFEST),  # never sealed
        (lambda p: (p / MANIFEST).write_text("{not json"), MANIFEST),  # torn manifest
        (lambda p: (p / "stray.pt").write_bytes(b"x"), "stray.pt"),  # a file the manifest does not vouch for
    ],
    ids=["corrupted", "missing-file", "no-manifest", "torn-manifest", "extra-file"],
)
def test_a_damaged_checkpoint_is_rejected_and_the_previous_one_loaded(
    tmp_path: Path, damage, at_fault: str
) -> None:
    manager = CheckpointManager(tmp_path, keep_last=3)
    manager.save(1, _writer("one"))
    newest = manager.save(2, _writer("two"))
    damage(newest.path)
    with pytest.raises(CheckpointError) as raised:
        verify(newest.path)
    assert raised.value.file == newest.path / at_fault and str(raised.value).startswith(str(newest.path))
    latest, rejected = manager.latest_and_rejected()
    assert [(r.path, r.file) for r in rejected] == [(newest.path, newest.path / at_fault)]
    assert rejected[0].reason == raised.value.reason
    assert latest is not None and latest.step == 1 and manager.latest() == latest
    assert json.loads((latest.path / "sub" / "state.json").read_text()) == {"payload": "one"}


def test_a_killed_writers_temp_dir_is_ignored_and_cleaned(tmp_path: Path) -> None:
    manager = CheckpointManager(tmp_path)
    manager.save(1, _writer("one"))
    stale = tmp_path / ".tmp-step-000002-abcd"
    stale.mkdir()
    (stale / "weights.bin").write_bytes(b"partial")
    assert manager.latest().step == 1
    manager.save(2, _writer("two"))
    assert not stale.exists() and manager.latest().step == 2


def test_resaving_a_step_replaces_it(tmp_path: Path) -> None:
    manager = CheckpointManager(tmp_path)
    manager.save(5, _writer("old"))
    manager.save(5, _writer("new"))
    assert json.loads((manager.path_for(5) / "sub" / "state.json").read_text()) == {"payload": "new"}
    assert verify(manager.path_for(5))
