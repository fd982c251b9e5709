from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from coding_framework.repotasks.swebench import MAX_FILE_BYTES, SwebenchLoadError, load_swebench

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "swebench"
TASKS = FIXTURE / "tasks.jsonl"
REPOS = FIXTURE / "repos"
FIRST, SECOND = "example-org__tinycalc-4", "example-org__tinycalc-9"


def _rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in TASKS.read_text().splitlines()]


def _write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_the_fixture_is_in_the_official_row_format() -> None:
    official = {
        "repo",
        "instance_id",
        "base_commit",
        "patch",
        "test_patch",
        "problem_statement",
        "hints_text",
        "created_at",
        "version",
        "FAIL_TO_PASS",
        "PASS_TO_PASS",
        "environment_setup_commit",
    }
    for row in _rows():
        assert set(row) == official
        assert all(isinstance(value, str) for value in row.values())
        assert isinstance(json.loads(row["FAIL_TO_PASS"]), list)
        assert row["patch"].startswith("diff --git a/") and row["test_patch"].startswith("diff --git a/")


def test_loads_both_instances() -> None:
    first, second = load_swebench(TASKS, REPOS)
    rows = _rows()
    assert [first.instance_id, second.instance_id] == [FIRST, SECOND]
    for task, row in zip((first, second), rows, strict=True):
        assert task.source == "swebench"
        assert task.repo == "example-org/tinycalc"
        assert task.base_commit == row["base_commit"] and len(task.base_commit) == 40
        assert task.version == "0.1"
        assert task.patch == row["patch"] and task.test_patch == row["test_patch"]
        assert task.problem_statement == row["problem_statement"]
        assert {"tinycalc/ops.py", "tinycalc/parser.py", "tests/test_ops.py", "pyproject.toml"} <= set(
            task.files
        )
    assert first.FAIL_TO_PASS == ["tests/test_ops.py::test_divide_by_zero"]
    assert "tests/test_ops.py::test_divide" in first.PASS_TO_PASS
    assert second.FAIL_TO_PASS == [
        "tests/test_associativity.py::test_subtraction_chain",
        "tests/test_associativity.py::test_division_chain",
        "tests/test_associativity.py::test_mixed_chain",
    ]
    assert second.PASS_TO_PASS == ["tests/test_associativity.py::test_addition_chain"]
    # 2 lines added to divide(); 16 lines changed in the parser's two loops.
    assert (first.difficulty, second.difficulty) == ("easy", "medium")
    assert "tests/test_associativity.py" not in second.files


def test_gold_and_test_patches_apply() -> None:
    first, second = load_swebench(TASKS, REPOS)
    assert 'raise CalcError("division by zero")' not in first.files["tinycalc/ops.py"]
    assert 'raise CalcError("division by zero")' in first.fixed_files()["tinycalc/ops.py"]
    assert "while self.peek() in" in second.fixed_files()["tinycalc/parser.py"]
    assert set(first.hidden_files()) == {"tests/test_ops.py"}
    assert set(second.hidden_files()) == {"tests/test_associativity.py"}
    for task in (first, second):
        hidden = "".join(task.hidden_files().values())
        for test in task.FAIL_TO_PASS + task.PASS_TO_PASS:
            assert f"def {test.split('::')[1]}(" in hidden


def test_real_lists_are_accepted(tmp_path: Path) -> None:
    row = _rows()[0]
    row["FAIL_TO_PASS"], row["PASS_TO_PASS"] = json.loads(row["FAIL_TO_PASS"]), []
    for key in ("hints_text", "created_at", "environment_setup_commit"):
        del row[key]
    (task,) = load_swebench(_write(tmp_path, [json.dumps(row)]), REPOS)
    assert task.FAIL_TO_PASS == ["tests/test_ops.py::test_divide_by_zero"] and task.PASS_TO_PASS == []


def test_the_snapshot_may_be_named_by_repo_and_base_commit(tmp_path: Path) -> None:
    row = _rows()[1]
    shutil.copytree(REPOS / SECOND, tmp_path / "repos" / f"example-org__tinycalc__{row['base_commit'][:7]}")
    (task,) = load_swebench(_write(tmp_path, [json.dumps(row)]), tmp_path / "repos")
    assert task.files == load_swebench(TASKS, REPOS)[1].files


def test_the_snapshot_leaves_out_git_binary_large_and_linked_files(tmp_path: Path) -> None:
    repos = tmp_path / "repos"
    snapshot = repos / FIRST
    shutil.copytree(REPOS / FIRST, snapshot)
    (snapshot / ".git").mkdir()
    (snapshot / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (snapshot / "tinycalc" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    (snapshot / "tinycalc" / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    (snapshot / "big.txt").write_text("x" * (MAX_FILE_BYTES + 1))
    (snapshot / "link.py").symlink_to(snapshot / "tinycalc" / "ops.py")
    (snapshot / "docs").symlink_to(snapshot / "tinycalc", target_is_directory=True)
    (task,) = load_swebench(_write(tmp_path, [TASKS.read_text().splitlines()[0]]), repos)
    assert set(task.files) == {
        p.relative_to(REPOS / FIRST).as_posix() for p in (REPOS / FIRST).rglob("*") if p.is_file()
    }


def _replace(index: int, **fields: Any) -> Callable[[], list[str]]:
    def lines() -> list[str]:
        row = _rows()[index]
        row.update(fields)
        return [json.dumps({k: v for k, v in row.items() if v is not _DROP})]

    return lines


_DROP = object()


def _first_two(second: dict[str, Any]) -> list[str]:
    return [json.dumps(_rows()[0]), json.dumps(second)]


ERRORS: dict[str, tuple[Callable[[], list[str]], int, str]] = {
    "malformed JSON": (lambda: [TASKS.read_text().splitlines()[0], '{"repo": "x",'], 2, "invalid JSON"),
    "not an object": (lambda: ["[1, 2]"], 1, "expected a JSON object, got list"),
    "missing field": (_replace(0, patch=_DROP, version=_DROP), 1, "missing fields patch, version"),
    "not a string": (_replace(0, base_commit=123), 1, "field 'base_commit' should be a string, got int"),
    "F2P of numbers": (_replace(0, FAIL_TO_PASS="[1]"), 1, "FAIL_TO_PASS should be a list of test names"),
    "F2P an object": (_replace(0, FAIL_TO_PASS={"a": "b"}), 1, "FAIL_TO_PASS should be a list of test names"),
    "F2P not JSON": (_replace(0, FAIL_TO_PASS="tests/x.py::t"), 1, "FAIL_TO_PASS is a string but not JSON"),
    "P2P of numbers": (_replace(0, PASS_TO_PASS=[1]), 1, "PASS_TO_PASS should be a list of test names"),
    "F2P empty": (_replace(0, FAIL_TO_PASS="[]"), 1, f"{FIRST}: FAIL_TO_PASS is empty"),
    "F2P in P2P": (
        _replace(0, PASS_TO_PASS='["tests/test_ops.py::test_divide_by_zero"]'),
        1,
        f"{FIRST}: Value error, tests both in FAIL_TO_PASS and PASS_TO_PASS",
    ),
    "id not plain": (
        _replace(0, instance_id="../tinycalc-4"),
        1,
        "instance_id '../tinycalc-4' is not a plain name",
    ),
    "no snapshot": (
        _replace(0, instance_id="example-org__tinycalc-5", base_commit="abcdef0123"),
        1,
        f"no snapshot of example-org/tinycalc at abcdef0: looked for {REPOS}/example-org__tinycalc-5 and "
        f"{REPOS}/example-org__tinycalc__abcdef0; SWE-bench repositories cannot be fetched here",
    ),
    # The first instance's patches were made for an older base commit than the second's.
    "patch for another commit": (
        lambda: _first_two({**_rows()[1], "patch": _rows()[0]["patch"]}),
        2,
        f"{SECOND}: the patch does not apply to the snapshot {REPOS / SECOND}: tinycalc/ops.py:",
    ),
    "test_patch for another commit": (
        lambda: _first_two({**_rows()[1], "test_patch": _rows()[0]["test_patch"]}),
        2,
        f"{SECOND}: the test_patch does not apply to the snapshot {REPOS / SECOND}: tests/test_ops.py:",
    ),
    "empty patch": (_replace(0, patch=""), 1, f"{FIRST}: the patch changes no file of the snapshot"),
    "duplicate": (lambda: TASKS.read_text().splitlines()[:1] * 2, 2, f"duplicate instance_id '{FIRST}'"),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_bad_input_gives_one_line_naming_the_file_and_line(tmp_path: Path, case: str) -> None:
    lines, lineno, expected = ERRORS[case]
    path = _write(tmp_path, lines())
    with pytest.raises(SwebenchLoadError) as caught:
        load_swebench(path, REPOS)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{path}:{lineno}: ")
    assert expected in message


@pytest.mark.parametrize(
    ("content", "expected"), [(None, "cannot read the file"), ("\n", "the file holds no instances")]
)
def test_an_unreadable_or_empty_file_is_named(tmp_path: Path, content: str | None, expected: str) -> None:
    path = tmp_path / "tasks.jsonl"
    if content is not None:
        path.write_text(content)
    with pytest.raises(SwebenchLoadError, match=f"^{re.escape(str(path))}: {expected}"):
        load_swebench(path, REPOS)
