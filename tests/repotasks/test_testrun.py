from __future__ import annotations

import ast
import shutil
import sys
from pathlib import Path

from coding_framework.repotasks import testrun
from coding_framework.repotasks.testrun import format_report, probe_failure, run_test_files

TINY = Path(__file__).resolve().parents[1] / "fixtures" / "minirepo_tiny"


def _repo(tmp_path: Path) -> Path:
    """The tiny template as a task sees it once the hidden tests are added: every test under tests/."""
    root = tmp_path / "repo"
    shutil.copytree(TINY / "tinykit", root / "tinykit")
    shutil.copytree(TINY / "tests", root / "tests")
    for hidden in (TINY / "hidden").iterdir():
        shutil.copy(hidden, root / "tests" / hidden.name)
    return root


def _tests(root: Path) -> list[str]:
    return sorted(f"tests/{p.name}" for p in (root / "tests").glob("test_*.py"))


def _edit(root: Path, path: str, old: str, new: str) -> None:
    file = root / path
    text = file.read_text()
    assert old in text
    file.write_text(text.replace(old, new))


def test_every_test_of_the_template_passes(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    results = run_test_files(str(root), _tests(root))
    assert len(results) == 19
    assert all(r == {"passed": True} for r in results.values())
    assert list(results)[:2] == [
        "tests/test_arith.py::test_clamp_inside",
        "tests/test_arith.py::test_mean_simple",
    ]
    assert format_report(results) == "19 passed, 0 failed"


def test_a_failing_assert_is_reported_with_its_line(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    _edit(root, "tinykit/arith.py", "        return high\n", "        return value\n")
    results = run_test_files(str(root), ["tests/test_arith_hidden.py"])
    assert results["tests/test_arith_hidden.py::test_clamp_high"] == {
        "passed": False,
        "error": "AssertionError",
        "line": 10,
    }
    assert results["tests/test_arith_hidden.py::test_clamp_low"] == {"passed": True}
    report = format_report(results)
    assert report.splitlines() == [
        "FAILED tests/test_arith_hidden.py::test_clamp_high - AssertionError",
        "6 passed, 1 failed",
    ]


def test_raises_fails_when_nothing_or_something_else_is_raised(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    _edit(root, "tinykit/arith.py", '        raise ValueError("mean of an empty list")', "        return 0")
    results = run_test_files(str(root), ["tests/test_arith_hidden.py"])
    assert (
        results["tests/test_arith_hidden.py::test_mean_empty"]["error"]
        == "AssertionError: DID NOT RAISE ValueError"
    )
    _edit(root, "tinykit/arith.py", "        return 0\n", "        return values[0]\n")
    results = run_test_files(str(root), ["tests/test_arith_hidden.py"])
    assert (
        results["tests/test_arith_hidden.py::test_mean_empty"]["error"]
        == "IndexError: list index out of range"
    )


def test_raises_match_checks_the_message(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    (root / "tests" / "test_match.py").write_text(
        "import pytest\nfrom tinykit.arith import mean\n\n\n"
        "def test_right():\n    with pytest.raises(ValueError, match='empty'):\n        mean([])\n\n\n"
        "def test_wrong():\n    with pytest.raises(ValueError, match='^full'):\n        mean([])\n"
    )
    results = run_test_files(str(root), ["tests/test_match.py"])
    assert results["tests/test_match.py::test_right"]["passed"]
    assert results["tests/test_match.py::test_wrong"]["error"].startswith("AssertionError: Regex '^full'")


def test_a_file_that_cannot_be_imported_is_one_collection_failure(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    _edit(root, "tests/test_words_hidden.py", "import count_words,", "import no_such_function,")
    results = run_test_files(str(root), ["tests/test_words_hidden.py", "tests/test_words.py"])
    assert results == {
        "tests/test_words_hidden.py::<collection>": {
            "passed": False,
            "error": "ImportError: cannot import name 'no_such_function' from 'tinykit.words' "
            f"({root / 'tinykit' / 'words.py'})",
        },
        "tests/test_words.py::test_count_words_simple": {"passed": True},
    }


def test_a_test_past_its_time_limit_fails_and_the_rest_still_run(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    (root / "tests" / "test_slow.py").write_text(
        "def test_forever():\n    while True:\n        pass\n\n\ndef test_after():\n    assert True\n"
    )
    results = run_test_files(str(root), ["tests/test_slow.py"], timeout_s=0.2)
    assert results["tests/test_slow.py::test_forever"]["error"] == "TestTimeout: ran past 0.2 s"
    assert results["tests/test_slow.py::test_after"] == {"passed": True}


def test_the_run_leaves_the_interpreter_as_it_was(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    path, real_pytest = list(sys.path), sys.modules["pytest"]
    run_test_files(str(root), _tests(root))
    assert sys.path == path and sys.modules["pytest"] is real_pytest
    assert not [name for name in sys.modules if name.split(".")[0] == "tinykit"]
    # A second run imports the package afresh: an edited module is seen.
    _edit(root, "tinykit/words.py", "        return 0\n", "        return 1\n")
    results = run_test_files(str(root), ["tests/test_words_hidden.py"])
    assert not results["tests/test_words_hidden.py::test_count_words_blank"]["passed"]


def test_probe_writes_the_failing_call_with_its_local_values(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    _edit(root, "tinykit/report.py", "clamp(count_words(text), 0, 5)", "clamp(count_words(text), 0, 2)")
    probe = probe_failure(str(root), "tests/test_report_hidden.py", "test_summary_scores")
    assert probe == {
        "expression": "summary(['one', 'one two three'])",
        "function": "summary",
        "module": "tinykit.report",
        "expects_raise": None,
        "standalone": True,
        "outcome": {"value": "'2 texts, mean score 1.5'"},
    }
    # The loop's failing iteration is the one written out.
    _edit(
        root, "tinykit/arith.py", "return [v * factor for v in values]", "return [v + factor for v in values]"
    )
    probe = probe_failure(str(root), "tests/test_arith_hidden.py", "test_scale_factor")
    assert probe is not None and probe["expression"] == "scale([1], 3)"
    assert probe_failure(str(root), "tests/test_arith_hidden.py", "test_clamp_low") is None


def test_probe_of_a_raises_block(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    _edit(root, "tinykit/arith.py", '        raise ValueError("mean of an empty list")', "        return 0")
    probe = probe_failure(str(root), "tests/test_arith_hidden.py", "test_mean_empty")
    assert probe is not None
    assert (probe["expression"], probe["expects_raise"], probe["outcome"]) == (
        "mean([])",
        "ValueError",
        {"value": "0"},
    )
    original = _repo(tmp_path / "original")
    assert testrun.evaluate_expressions(str(original), [("tests/test_arith_hidden.py", "mean([])")]) == [
        {"raised": "ValueError: mean of an empty list", "type": "ValueError"}
    ]


def test_the_module_runs_from_its_source_text_alone(tmp_path: Path) -> None:
    """The sandbox receives testrun.py as text: only the standard library, and only definitions at import."""
    source = Path(testrun.__file__).read_text()
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            assert all(n.split(".")[0] in sys.stdlib_module_names or n == "__future__" for n in names), names
    definitions = ast.Import | ast.ImportFrom | ast.FunctionDef | ast.ClassDef | ast.Assign | ast.AnnAssign
    body = tree.body[1:] if isinstance(tree.body[0], ast.Expr) else tree.body
    assert all(isinstance(node, definitions) for node in body)
    namespace: dict[str, object] = {"__name__": "sandboxed_testrun"}
    exec(compile(source, "testrun.py", "exec"), namespace)
    root = _repo(tmp_path)
    results = namespace["run_test_files"](str(root), _tests(root))  # type: ignore[operator]
    assert len(results) == 19 and all(r["passed"] for r in results.values())
