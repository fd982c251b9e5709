from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from coding_framework.repotasks.generate import (
    CallGraph,
    Template,
    TemplateError,
    build_candidates,
    load_template,
    module_count,
    problem_statement,
    split_tasks,
)
from coding_framework.repotasks.task import RepoTask, apply_patch
from coding_framework.repotasks.testrun import run_test_files

TINY = Path(__file__).resolve().parents[1] / "fixtures" / "minirepo_tiny"


@pytest.fixture(scope="module")
def template() -> Template:
    return load_template(TINY)


@pytest.fixture(scope="module")
def tasks(template: Template) -> list[RepoTask]:
    return build_candidates(template, max_per_function=3, timeout_s=10, workers=2)


@pytest.fixture()
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as name:
        yield Path(name)


def _run(root: Path, files: dict[str, str]) -> dict[str, bool]:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    tests = sorted(p for p in files if p.startswith("tests/"))
    return {name: r["passed"] for name, r in run_test_files(str(root), tests).items()}


def test_load_template(template: Template) -> None:
    assert template.name == "tinykit"
    assert list(template.modules) == [
        "tinykit/__init__.py",
        "tinykit/arith.py",
        "tinykit/report.py",
        "tinykit/words.py",
    ]
    assert list(template.tests) == ["tests/test_arith.py", "tests/test_report.py", "tests/test_words.py"]
    assert list(template.hidden) == [
        "tests/test_arith_hidden.py",
        "tests/test_report_hidden.py",
        "tests/test_words_hidden.py",
    ]
    assert set(template.snapshot()) == {"README.md", *template.modules, *template.tests}


def test_load_template_errors(tmp_path: Path) -> None:
    with pytest.raises(TemplateError, match=r"no README\.md"):
        load_template(tmp_path)
    (tmp_path / "README.md").write_text("# x\n")
    with pytest.raises(
        TemplateError, match=r"expected one package directory \(with __init__.py\), found \[\]"
    ):
        load_template(tmp_path)
    shutil.copytree(TINY / "tinykit", tmp_path / "tinykit")
    with pytest.raises(TemplateError, match="no hidden/test_"):
        load_template(tmp_path)
    (tmp_path / "hidden").mkdir()
    (tmp_path / "hidden" / "test_x_hidden.py").write_text("def test_x(:\n")
    with pytest.raises(TemplateError, match=r"test_x_hidden.py:1: invalid Python"):
        load_template(tmp_path)


def test_call_graph_resolves_imports_across_modules(template: Template) -> None:
    graph = CallGraph(template)
    assert graph.edges[("tinykit.report", "word_score")] == {
        ("tinykit.arith", "clamp"),
        ("tinykit.words", "count_words"),
    }
    assert graph.edges[("tinykit.words", "initials")] == {("tinykit.words", "normalize")}
    summary = ("tinykit.report", "summary")
    assert graph.distance([summary], summary) == 0
    assert graph.distance([summary], ("tinykit.words", "normalize")) == 3
    assert graph.distance([("tinykit.arith", "mean")], ("tinykit.words", "normalize")) is None


def test_candidates_fail_hidden_tests_and_the_gold_patch_fixes_them(
    template: Template, tasks: list[RepoTask], workdir: Path
) -> None:
    assert len(tasks) >= 8
    original = _run(workdir / "original", {**template.snapshot(), **template.hidden})
    assert len(original) == 19 and all(original.values())
    hidden_tests = set(original)
    for task in tasks:
        assert task.FAIL_TO_PASS
        assert set(task.FAIL_TO_PASS) | set(task.PASS_TO_PASS) == {t for t in hidden_tests if "_hidden" in t}
        assert not [p for p in task.files if p.startswith("hidden/") or "_hidden" in p]
        assert apply_patch(task.files, task.patch) == template.snapshot()
        assert task.hidden_files() == template.hidden
        assert task.patch.count("\n-") == task.patch.count("\n+") or task.bug_kind == "dropped_branch"
    sample = tasks[:: max(1, len(tasks) // 4)]
    for number, task in enumerate(sample):
        before = _run(workdir / f"bug{number}", {**task.files, **task.hidden_files()})
        after = _run(workdir / f"fix{number}", {**task.fixed_files(), **task.hidden_files()})
        assert not any(before[t] for t in task.FAIL_TO_PASS)
        assert all(before[t] for t in task.PASS_TO_PASS)
        assert all(after.values())


def test_ids_kinds_and_difficulty(tasks: list[RepoTask]) -> None:
    for task in tasks:
        assert re.fullmatch(r"tinykit__(arith|words|report)__[a-z_]+__[a-z_]+_\d+", task.instance_id)
        assert task.instance_id.split("__")[-1].rsplit("_", 1)[0] == task.bug_kind
        assert task.repo == "minirepo/tinykit" and task.source == "minirepo"
        assert task.difficulty == {0: "easy", 1: "medium"}.get(task.distance, "hard")
        assert module_count(task) == 3
    assert len({t.instance_id for t in tasks}) == len(tasks)
    assert len({t.bug_kind for t in tasks}) >= 4


def test_problem_statements_describe_behaviour_not_tests(tasks: list[RepoTask]) -> None:
    for task in tasks:
        text = task.problem_statement
        assert "assert" not in text and "def test" not in text and "tests/" not in text
        assert re.search(r"`[a-z_]+\(.*\)`", text), text
    by_id = {t.instance_id: t for t in tasks}
    dropped = by_id["tinykit__arith__mean__dropped_branch_0"]
    assert "`mean([])`" in dropped.problem_statement and "ValueError" in dropped.problem_statement
    # A bug two calls below the function the issue is about: named by the issue's function's module only.
    deep = by_id["tinykit__words__normalize__wrong_default_0"]
    assert (deep.distance, deep.difficulty) == (2, "hard")
    assert "word_score(" in deep.problem_statement and "`tinykit.report`" in deep.problem_statement
    assert "tinykit.words" not in deep.problem_statement


def test_issues_from_the_farthest_failing_test(template: Template, tasks: list[RepoTask]) -> None:
    farthest = {t.instance_id: t for t in build_candidates(template, workers=2, issue_from="farthest")}
    assert set(farthest) == {t.instance_id for t in tasks}
    assert all(farthest[t.instance_id].distance >= t.distance for t in tasks)
    assert sum(t.distance for t in farthest.values()) > sum(t.distance for t in tasks)
    summary = farthest["tinykit__arith__mean__operator_swap_0"]
    assert summary.distance == 1 and "`summary(" in summary.problem_statement


def test_problem_statement_phrasings() -> None:
    probe = {
        "expression": "f(1)",
        "function": "f",
        "module": "pkg.mod",
        "outcome": {"value": "2"},
    }
    said = problem_statement("x", probe, {"value": "3"}, ("pkg.mod", "f"))
    assert "`f(1)`" in said and "2" in said and "3" in said and "`pkg.mod`" in said
    said = problem_statement("x", probe, {"raised": "ValueError: no", "type": "ValueError"}, ("pkg.mod", "f"))
    assert "raise ValueError" in said or "raising ValueError" in said
    # The same result on the original: nothing concrete to report, so the issue stays vague.
    said = problem_statement("x", probe, {"value": "2"}, ("pkg.mod", "f"))
    assert "f(1)" not in said and "`f`" in said
    variants = {problem_statement(f"id{i}", probe, {"value": "3"}, ("pkg.mod", "f")) for i in range(20)}
    assert len(variants) == 3


def _group(task: RepoTask) -> str:
    parts = task.instance_id.split("__")
    return f"{parts[0]}::{parts[2]}"


def test_split_keeps_groups_together_and_drops_duplicates(tasks: list[RepoTask]) -> None:
    copy = tasks[0].model_copy(update={"instance_id": "tinykit__zz__copy__operator_swap_0"})
    splits = split_tasks([*tasks, copy], sizes=(6, 2, 2))
    assert set(splits) == {"train", "validation", "test"}
    kept = [t for split in splits.values() for t in split]
    assert copy.instance_id not in {t.instance_id for t in kept}
    assert len(splits["train"]) <= 6 and len(splits["validation"]) <= 2 and len(splits["test"]) <= 2
    assert len(kept) == min(10, len(tasks))
    groups = {name: {_group(t) for t in split} for name, split in splits.items()}
    assert not groups["train"] & groups["validation"] and not groups["train"] & groups["test"]
    assert not groups["validation"] & groups["test"]
    assert len({tuple(sorted(t.files.items())) for t in kept}) == len(kept)
    assert split_tasks(list(reversed(tasks)), sizes=(6, 2, 2)) == split_tasks(tasks, sizes=(6, 2, 2))
    with pytest.raises(ValueError, match="three non-negative counts"):
        split_tasks(tasks, sizes=(1, 2))  # type: ignore[arg-type]
