"""Every result a benchmark files under benchmarks/results goes through ``write_result``, so it records the
command, CPU, load, model sha256 and package versions; a hand-rolled JSON writer to a results path fails
here (read statically: no benchmark runs). A result filed before that record was complete is marked history
and listed, with what its record lacks, in benchmarks/results_history.yaml; a file marked but not listed
fails, so history is a recorded state rather than a way out."""

from __future__ import annotations

import ast
import importlib.util
import json
import sys
import time
from pathlib import Path

import pytest
import yaml

from coding_framework.evaluation.machine import (
    HISTORY_KEY,
    RECORD_KEYS,
    LoadMonitor,
    command_line,
    missing_record,
    write_result,
)
from coding_framework.models.checksums import weights_checksum

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
MODULES = sorted(str(p.relative_to(BENCHMARKS)) for p in BENCHMARKS.rglob("*.py") if p.name != "__init__.py")
SCRIPTS = [name for name in MODULES if name != "harness.py"]


def _is_results_path(node: ast.AST) -> bool:
    """A string naming the results folder: the path part ``"results"`` or ``".../results/..."``."""
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and (
        node.value == "results" or "results/" in node.value
    )


def _bindings(tree: ast.AST) -> list[tuple[list[str], ast.AST]]:
    """(names bound, the expression bound to them): assignments and ``with ... as`` anywhere in the module."""
    out: list[tuple[list[str], ast.AST]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
            out.append((names, node.value))
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            names = [n.id for n in ast.walk(node.optional_vars) if isinstance(n, ast.Name)]
            out.append((names, node.context_expr))
    return out


def _out_options(tree: ast.AST) -> list[tuple[str, ast.AST]]:
    """(dest, default) of every ``add_argument("--dest", default=...)``: ``args.dest`` holds that default."""
    out = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument" and node.args and isinstance(node.args[0], ast.Constant)
                and str(node.args[0].value).startswith("--")):
            for kw in node.keywords:
                if kw.arg == "default":
                    out.append((str(node.args[0].value)[2:].replace("-", "_"), kw.value))
    return out


def _json_writes(tree: ast.AST) -> list[tuple[ast.Call, ast.AST]]:
    """(call, its target) for ``json.dump(x, fh)`` and ``target.write_text/write(... json.dumps ...)``."""
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        func = node.func
        if func.attr == "dump" and isinstance(func.value, ast.Name) and func.value.id == "json":
            out.append((node, node.args[1] if len(node.args) > 1 else node))
        elif func.attr in ("write_text", "write") and any(
            isinstance(n, ast.Attribute) and n.attr == "dumps" for arg in node.args for n in ast.walk(arg)
        ):
            out.append((node, func.value))
    return out


def hand_rolled_result_writes(source: str) -> list[str]:
    """Lines of ``source`` that write JSON to a results path other than through ``write_result``."""
    tree = ast.parse(source)
    names, options = {"RESULTS"}, set()

    def leads_to_results(expr: ast.AST) -> bool:
        return any(
            _is_results_path(n)
            or (isinstance(n, ast.Name) and n.id in names)
            or (isinstance(n, ast.Attribute) and n.attr in options)
            for n in ast.walk(expr)
        )

    while True:  # what is bound from a results path is one too, however many assignments away
        before = (len(names), len(options))
        names |= {n for bound, value in _bindings(tree) if leads_to_results(value) for n in bound}
        options |= {dest for dest, default in _out_options(tree) if leads_to_results(default)}
        if (len(names), len(options)) == before:
            break
    return [f"line {call.lineno}: {ast.unparse(call)[:100]}"
            for call, target in _json_writes(tree) if leads_to_results(target)]


def files_results(source: str) -> bool:
    """Whether ``source`` names the results folder (a path part, or the harness's RESULTS)."""
    tree = ast.parse(source)
    return any(_is_results_path(n) or (isinstance(n, ast.Name) and n.id == "RESULTS") for n in ast.walk(tree))


def calls_write_result(source: str) -> bool:
    return any(
        isinstance(n, ast.Call) and getattr(n.func, "id", getattr(n.func, "attr", None)) == "write_result"
        for n in ast.walk(ast.parse(source))
    )


@pytest.mark.parametrize("name", SCRIPTS)
def test_benchmark_writes_results_through_write_result(name: str) -> None:
    source = (BENCHMARKS / name).read_text()
    assert hand_rolled_result_writes(source) == []
    if files_results(source):
        assert calls_write_result(source), f"{name} names benchmarks/results but never calls write_result"


def package_violations(source: str) -> list[str]:
    """What a benchmark module may not do: edit ``sys.path``, import from tests/ or scripts/, or reach the
    record and writer other than through ``benchmarks.harness``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr == "path" and isinstance(node.value, ast.Name) \
                and node.value.id == "sys":
            found.append(f"line {node.lineno}: edits sys.path")
        modules = ([a.name for a in node.names] if isinstance(node, ast.Import)
                   else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        for module in modules:
            if module.split(".")[0] in ("tests", "scripts", "machine"):
                found.append(f"line {node.lineno}: imports {module}")
            elif module == "coding_framework.evaluation.machine":
                found.append(f"line {node.lineno}: imports {module}, not benchmarks.harness")
    return found


@pytest.mark.parametrize("name", SCRIPTS)
def test_a_benchmark_is_a_module_of_the_package(name: str) -> None:
    """Run as ``python -m benchmarks.<group>.<name>``: no path edits, no tests/ imports, one harness."""
    assert package_violations((BENCHMARKS / name).read_text()) == []


@pytest.mark.parametrize("source", [
    "import sys\nsys.path.insert(0, 'x')\n",
    "from tests.fakes.chat import fenced\n",
    "import scripts.serving_demo\n",
    "from machine import write_result\n",
    "from coding_framework.evaluation.machine import write_result\n",
])
def test_a_path_edit_a_tests_import_or_another_writer_is_caught(source: str) -> None:
    assert package_violations(source)


def test_a_module_run_records_its_python_m_command(monkeypatch: pytest.MonkeyPatch) -> None:
    main = type(sys)("__main__")
    main.__spec__ = importlib.util.find_spec("benchmarks.harness")
    monkeypatch.setitem(sys.modules, "__main__", main)
    monkeypatch.setattr(sys, "argv", [str(BENCHMARKS / "harness.py"), "--limit", "2"])
    assert command_line() == "python -m benchmarks.harness --limit 2"


@pytest.mark.parametrize(
    "source",
    [
        'RESULTS = ROOT / "benchmarks" / "results" / "x.json"\nRESULTS.write_text(json.dumps(report))\n',
        'ap.add_argument("--out", type=Path, default=ROOT / "results" / "x.json")\n'
        'args = ap.parse_args()\nargs.out.write_text(json.dumps(report, indent=2) + "\\n")\n',
        'path = RESULTS / "x.json"\nout = path\nwith open(out, "w") as fh:\n    json.dump(report, fh)\n',
        'json.dump(report, open("benchmarks/results/x.json", "w"))\n',
    ],
)
def test_a_hand_rolled_results_writer_is_caught(source: str) -> None:
    assert hand_rolled_result_writes(source)


def test_writes_elsewhere_and_write_result_pass() -> None:
    source = (
        'RESULTS = ROOT / "benchmarks" / "results" / "x.json"\n'
        'spec = Path(tmp) / "in.json"\nspec.write_text(json.dumps(jobs))\n'
        'write_result(RESULTS, report, load)\n'
    )
    assert hand_rolled_result_writes(source) == []
    assert files_results(source) and calls_write_result(source)


def test_write_result_records_the_run_and_keeps_the_figures(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "model.safetensors").write_bytes(b"weights")
    figures = {"samples": 3, "pass@1": 0.5, "sides": {"ours": {"seconds": 1.0}}}
    with LoadMonitor(interval_s=0.01) as load:
        time.sleep(0.05)
    path = write_result(tmp_path / "new" / "r.json", figures, load, model_dir=model,
                        extra_packages={"anchor (venv)": "1.0"})
    record = json.loads(path.read_text())
    assert list(record) == [*RECORD_KEYS, *figures]
    assert {k: record[k] for k in figures} == figures
    assert load.samples
    assert set(record["load_avg"]) == {"before", "during_mean", "during_max", "after"}
    assert all(isinstance(v, float) for v in record["load_avg"].values())
    assert record["model_sha256"] == weights_checksum(model)
    assert record["packages"]["anchor (venv)"] == "1.0"
    assert record["cores"] >= 1 and record["cpu"] and record["command"]


@pytest.mark.parametrize("key", [*RECORD_KEYS, HISTORY_KEY])
def test_a_figure_named_like_a_record_key_is_an_error(tmp_path: Path, key: str) -> None:
    with pytest.raises(ValueError, match="overwrite the run record"):
        write_result(tmp_path / "r.json", {key: "the script's own", "x": 1})
    assert not (tmp_path / "r.json").exists()


def test_a_figure_measured_elsewhere_records_that_machine(tmp_path: Path) -> None:
    gpu = {"command": "python3 -m benchmarks.training.gpu_precision --raw out.json", "device": "NVIDIA H100",
           "driver": "570.1", "torch": "2.11.0+cu130"}
    record = json.loads(write_result(tmp_path / "r.json", {"x": 1}, measured_on=gpu).read_text())
    assert record["measured_on"] == gpu and record["command"] != gpu["command"]
    with pytest.raises(ValueError, match="driver"):
        write_result(tmp_path / "r.json", {"x": 1}, measured_on={k: gpu[k] for k in gpu if k != "driver"})
    with pytest.raises(ValueError, match="measured_on"):
        write_result(tmp_path / "r.json", {"measured_on": gpu}, measured_on=gpu)


def test_gpu_precision_files_the_gpu_machine_record(tmp_path: Path) -> None:
    from benchmarks.training import gpu_precision

    gpu = {"command": "python3 -m benchmarks.training.gpu_precision --raw r.json", "device": "NVIDIA H100",
           "driver": "570.1", "torch": "2.11.0+cu130", "cuda": "13.0"}
    raw = tmp_path / "raw.json"
    raw.write_text(json.dumps({"modes": ["fp32"], "measured_on": gpu, "runs": []}))
    gpu_precision.main(["--file", str(raw), "--out", str(tmp_path / "filed.json")])
    filed = json.loads((tmp_path / "filed.json").read_text())
    assert filed["measured_on"] == gpu and missing_record(filed) in ([], ["load_avg before and during"])
    assert filed["command"] != gpu["command"]


RESULT_FILES = sorted(str(p.relative_to(BENCHMARKS / "results"))
                      for p in (BENCHMARKS / "results").rglob("*.json"))


HISTORY_LIST = BENCHMARKS / "results_history.yaml"


@pytest.mark.parametrize("name", RESULT_FILES)
def test_every_result_file_says_how_it_was_made(name: str) -> None:
    """Every JSON under benchmarks/results has the full record, or is marked as history with the reason."""
    result = json.loads((BENCHMARKS / "results" / name).read_text())
    assert isinstance(result, dict) and missing_record(result) == [], (
        f"{name} lacks {missing_record(result)}: re-run it, or mark it "
        '{"record": {"status": "history", "why": ...}} with what is known')


def is_history(result: object) -> bool:
    marker = result.get(HISTORY_KEY) if isinstance(result, dict) else None
    return isinstance(marker, dict) and marker.get("status") == "history"


def history_mismatches(files: dict[str, object], listed: dict[str, dict[str, str]]) -> list[str]:
    """Where the result files (name -> parsed JSON) and benchmarks/results_history.yaml disagree: a file
    marked history that is not listed, a listed one gone or no longer marked, a reason left empty, and a
    summary of history files that is missing or is itself marked."""
    marked = {name for name, result in files.items() if is_history(result)}
    history, summaries = listed.get("history") or {}, listed.get("summaries_of_history") or {}
    problems = [f"{name} is marked history but not listed in {HISTORY_LIST.name}: re-run it through "
                f"write_result, or list it with what its record lacks"
                for name in sorted(marked - set(history))]
    problems += [f"{name} is listed as history but {'is not marked' if name in files else 'does not exist'}: "
                 f"take it off the list" for name in sorted(set(history) - marked)]
    problems += [f"{name} is listed in summaries_of_history but "
                 f"{'is marked history itself' if name in marked else 'does not exist'}"
                 for name in sorted(set(summaries) - (set(files) - marked))]
    problems += [f"{name} is listed without its reason" for name, why in {**history, **summaries}.items()
                 if not str(why or "").strip()]
    return problems


def test_the_history_files_are_the_listed_ones() -> None:
    files = {name: json.loads((BENCHMARKS / "results" / name).read_text()) for name in RESULT_FILES}
    listed = yaml.safe_load(HISTORY_LIST.read_text())
    assert history_mismatches(files, listed) == []
    print(f"{len(listed['history'])} of {len(files)} result files are history")


def test_an_unlisted_history_file_or_a_stale_entry_is_caught() -> None:
    marker = {HISTORY_KEY: {"status": "history", "why": "filed before the record"}}
    files = {"a.json": marker, "b.json": {"x": 1}}
    listed = {"history": {"a.json": "no load recorded"}, "summaries_of_history": {"b.json": "summed from a"}}
    assert history_mismatches(files, listed) == []
    unlisted = history_mismatches(files | {"c.json": marker}, listed)
    assert unlisted and "c.json is marked history but not listed" in unlisted[0]
    assert "is not marked" in history_mismatches({**files, "a.json": {"x": 1}}, listed)[0]
    assert "does not exist" in history_mismatches({"b.json": {"x": 1}}, listed)[0]
    assert "without its reason" in history_mismatches(files, {**listed, "history": {"a.json": " "}})[0]
    both = {**listed, "history": {"a.json": "x", "b.json": "y"}}
    assert "marked history itself" in history_mismatches({**files, "b.json": marker}, both)[0]


def test_a_partial_record_or_a_bare_history_marker_is_caught() -> None:
    full = {key: {"before": 1.0, "during_mean": 1.0} if key == "load_avg" else "x" for key in RECORD_KEYS}
    assert missing_record(full) == []
    assert missing_record({k: v for k, v in full.items() if k != "cpu"}) == ["cpu"]
    assert missing_record(full | {"load_avg": {"before": None, "during_mean": None}}) == [
        "load_avg before and during"]
    assert missing_record(full | {"measured_on": {"device": "GPU"}}) == [
        "measured_on.command", "measured_on.driver", "measured_on.torch"]
    assert missing_record({HISTORY_KEY: {"status": "history", "why": "filed before the record"}}) == []
    assert missing_record({HISTORY_KEY: {"status": "history"}}) == ["a history record without its why"]
