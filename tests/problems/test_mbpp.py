"""MBPP loader: both variants, standard splits, entry points, prompts, few-shot format, bad files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from coding_framework.problems import ProblemLoadError, load_benchmark, load_mbpp, mbpp_few_shot_prompt
from coding_framework.problems.mbpp import FEW_SHOT_TASKS

FULL_SPLITS = {"prompt": 10, "test": 500, "validation": 90, "train": 374}
SANITIZED_SPLITS = {"prompt": 7, "test": 257, "validation": 43, "train": 120}


@pytest.fixture(scope="module")
def mbpp_dir(shared_data: Path) -> Path:
    return shared_data / "mbpp"


@pytest.fixture(scope="module")
def full(mbpp_dir: Path):
    return load_mbpp(mbpp_dir / "mbpp.jsonl")


@pytest.fixture(scope="module")
def sanitized(mbpp_dir: Path):
    return load_mbpp(mbpp_dir / "sanitized-mbpp.json", variant="sanitized")


@pytest.fixture(scope="module")
def full_rows(mbpp_dir: Path) -> dict[int, dict]:
    rows = [json.loads(line) for line in (mbpp_dir / "mbpp.jsonl").read_text().splitlines()]
    return {r["task_id"]: r for r in rows}


def test_sizes_and_order(full, sanitized) -> None:
    assert [p.task_id for p in full] == [f"Mbpp/{i}" for i in range(1, 975)]
    assert len(sanitized) == 427
    numbers = [int(p.task_id.split("/")[1]) for p in sanitized]
    assert numbers == sorted(numbers) and len(set(numbers)) == 427
    assert all("sanitized" in p.tags for p in sanitized) and not any(p.tags for p in full)


@pytest.mark.parametrize(("variant", "sizes"), [("full", FULL_SPLITS), ("sanitized", SANITIZED_SPLITS)])
def test_standard_splits(mbpp_dir: Path, variant: str, sizes: dict[str, int]) -> None:
    everything = {p.task_id for p in load_mbpp(mbpp_dir, variant)}
    seen: set[str] = set()
    for split, size in sizes.items():
        ids = {p.task_id for p in load_mbpp(mbpp_dir, variant, split)}
        assert len(ids) == size, split
        assert not ids & seen
        seen |= ids
    assert seen == everything
    test_ids = [int(p.task_id.split("/")[1]) for p in load_mbpp(mbpp_dir, variant, "test")]
    assert min(test_ids) >= 11 and max(test_ids) <= 510


def test_field_mapping(full, full_rows) -> None:
    problem, row = full[1], full_rows[2]
    assert problem.entry_point == "similar_elements"
    assert problem.test_format == "asserts" and not problem.prompt_is_code
    assert problem.solutions == [row["code"].replace("\r\n", "\n")]
    assert full[103].solutions[0].endswith("return result\n")  # a lone trailing CR becomes LF
    assert problem.test_code == "\n".join(row["test_list"]) + "\n"
    assert problem.description == row["text"]
    assert problem.source == "mbpp"
    assert problem.prompt == (
        "You are an expert Python programmer, and here is your task: "
        f"{row['text']} Your code should pass these tests:\n\n" + "\n".join(row["test_list"]) + "\n"
    )
    assert all("\r" not in p.solutions[0] for p in full)


@pytest.mark.parametrize("which", ["full", "sanitized"])
def test_entry_point_found_defined_and_called(which: str, full, sanitized) -> None:
    for p in full if which == "full" else sanitized:
        assert re.search(rf"^def {p.entry_point}\s*\(", p.solutions[0], re.MULTILINE), p.task_id
        assert re.search(rf"\b{p.entry_point}\s*\(", p.test_code), p.task_id


def test_entry_point_prefers_the_function_over_a_class(full) -> None:
    # Task 601 defines class Pair and max_chain_length; its asserts call both.
    assert full[600].entry_point == "max_chain_length"


def test_imports_the_tests_need_are_in_the_prelude(full, sanitized) -> None:
    assert full[595].prelude == "import sys\n"  # asserts use sys.getsizeof; only the code imports sys
    with_math = next(p for p in sanitized if p.task_id == "Mbpp/82")
    assert with_math.prelude == "import math\n"
    assert with_math.test_code.startswith("import math\n")
    assert sum(bool(p.prelude) for p in full) == 1


def test_setup_code_precedes_the_asserts(full) -> None:
    tree_task = full[366]
    assert tree_task.test_code.startswith("root = Node(1)")
    assert tree_task.test_code.rstrip().endswith("assert is_tree_balanced(root2) == False")


def test_few_shot_prompt_format(full) -> None:
    target = full[10]
    prompt = mbpp_few_shot_prompt(target)
    assert prompt.count("[BEGIN]") == 4 and prompt.count("[DONE]") == 3
    assert prompt.endswith(target.prompt + "[BEGIN]\n")
    text, code, tests = FEW_SHOT_TASKS[0]
    assert prompt.startswith(
        f"You are an expert Python programmer, and here is your task: {text} Your code should pass these "
        f"tests:\n\n{tests[0]}\n{tests[1]}\n{tests[2]}\n[BEGIN]\n{code}\n[DONE]\n"
    )
    assert mbpp_few_shot_prompt(target, shots=0) == target.prompt + "[BEGIN]\n"
    with pytest.raises(ValueError, match="shots"):
        mbpp_few_shot_prompt(target, shots=4)


def test_few_shot_tasks_match_the_data(full) -> None:
    for (text, code, tests), problem in zip(FEW_SHOT_TASKS, full[1:4], strict=True):
        assert problem.description == text
        assert problem.solutions == [code]
        assert problem.test_code.splitlines() == [t.strip() for t in tests]


def test_folder_source_and_load_benchmark(mbpp_dir: Path, full, sanitized) -> None:
    assert load_mbpp(mbpp_dir) == full
    assert load_mbpp(mbpp_dir, "sanitized") == sanitized
    assert load_benchmark("mbpp", mbpp_dir, "validation") == load_mbpp(mbpp_dir, split="validation")
    assert load_benchmark("mbpp-sanitized", mbpp_dir) == sanitized


def test_variant_mismatch_and_bad_arguments(mbpp_dir: Path) -> None:
    with pytest.raises(ProblemLoadError, match=r"holds sanitized MBPP records.*variant='sanitized'"):
        load_mbpp(mbpp_dir / "sanitized-mbpp.json")
    with pytest.raises(ProblemLoadError, match="unknown MBPP split"):
        load_mbpp(mbpp_dir, split="dev")  # type: ignore[arg-type]
    with pytest.raises(ProblemLoadError, match="unknown MBPP variant"):
        load_mbpp(mbpp_dir, variant="tiny")  # type: ignore[arg-type]


def test_hub_offline_error_says_to_pass_a_local_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ProblemLoadError, match=r"google-research-datasets/mbpp.*pass a local path"):
        load_mbpp()
    with pytest.raises(ProblemLoadError, match="pass a local path"):
        load_mbpp("hf", variant="sanitized")


def test_hub_rows_map_like_the_local_file(monkeypatch: pytest.MonkeyPatch, full, full_rows) -> None:
    import datasets

    from coding_framework.problems import _io

    calls = []
    rows = list(full_rows.values())

    def fake_load_dataset(name, config=None):
        calls.append((name, config))
        # The hub splits the set four ways; the loader re-splits by task id.
        return datasets.DatasetDict(
            {"train": datasets.Dataset.from_list(rows[600:]), "test": datasets.Dataset.from_list(rows[:600])}
        )

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.setattr(_io, "_hub_reachable", lambda: True)
    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    assert load_mbpp(split="train") == [p for p in full if int(p.task_id.split("/")[1]) >= 601]
    assert calls == [("google-research-datasets/mbpp", "full")]


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_malformed_files_name_file_and_line(tmp_path: Path, full_rows) -> None:
    good = json.dumps(full_rows[2])
    no_call = {**full_rows[2], "test_list": ["assert 1 == 1", "assert True", "assert len([]) == 0"]}
    cases = [
        ("a.jsonl", f"{good}\n{{not json\n", r"a\.jsonl:2: invalid JSON"),
        (
            "b.jsonl",
            f"{good}\n\n{json.dumps({'task_id': 7, 'text': 'x'})}\n",
            r"b\.jsonl:3: missing field 'code'",
        ),
        (
            "c.jsonl",
            json.dumps({**full_rows[2], "task_id": "2"}) + "\n",
            r"c\.jsonl:1: field 'task_id' should be int",
        ),
        (
            "d.jsonl",
            json.dumps({**full_rows[2], "code": "def f(:"}) + "\n",
            r"d\.jsonl:1: code or tests are not valid",
        ),
        ("e.jsonl", json.dumps({**full_rows[2], "test_list": []}) + "\n", r"e\.jsonl:1: 'test_list' must be"),
        ("f.jsonl", json.dumps(no_call) + "\n", r"f\.jsonl:1: cannot find the function under test"),
        ("g.jsonl", f"{good}\n{good}\n", r"g\.jsonl:2: duplicate task_id 'Mbpp/2'"),
    ]
    for name, text, pattern in cases:
        with pytest.raises(ProblemLoadError, match=pattern):
            load_mbpp(_write(tmp_path / name, text))


def test_malformed_json_list_names_the_record_line(tmp_path: Path, mbpp_dir: Path) -> None:
    records = json.loads((mbpp_dir / "sanitized-mbpp.json").read_text())[:3]
    del records[2]["code"]
    pretty = _write(tmp_path / "pretty.json", json.dumps(records, indent=2))
    line = [i for i, text in enumerate(pretty.read_text().splitlines(), 1) if text == "  {"][2]
    with pytest.raises(ProblemLoadError, match=rf"pretty\.json:{line}: missing field 'code'"):
        load_mbpp(pretty, variant="sanitized")
    truncated = _write(tmp_path / "cut.json", json.dumps(records[:2], indent=2)[:-40])
    with pytest.raises(ProblemLoadError, match=r"cut\.json:\d+: invalid JSON"):
        load_mbpp(truncated, variant="sanitized")
    with pytest.raises(ProblemLoadError, match=r"nocomma\.json:1: invalid JSON: expected ','"):
        load_mbpp(_write(tmp_path / "nocomma.json", "[{} {}]"), variant="sanitized")
