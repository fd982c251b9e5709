"""The training data step drops by behaviour and says so in the manifest: a problem whose words share little
with a benchmark problem but whose reference passes its tests both ways is dropped as ``behaviour``; an
exact copy as ``exact``; the manifest counts each kind. Tiny problems, no public sets."""

from __future__ import annotations

from pathlib import Path

from coding_framework.config import load_config
from coding_framework.config.training import TrainingConfig
from coding_framework.problems import Problem, builtin_problems, write_problem_records
from coding_framework.testing.tiny_run import tiny_config
from coding_framework.training.run.data import prepare_data

STRLEN = Problem(
    task_id="bench/strlen", entry_point="strlen", test_format="check_function", source="bench",
    prompt='def strlen(string: str) -> int:\n    """ Return length of given string\n    """\n',
    description="Return length of given string",
    solutions=["def strlen(string: str) -> int:\n    return len(string)\n"],
    test_code="def check(candidate):\n    assert candidate('') == 0\n    assert candidate('asdasn') == 6\n",
)
LENGTH = Problem(
    task_id="mine/length", entry_point="string_length", source="mine", prompt="Find length of the string.",
    description="Find length of the string.",
    solutions=["def string_length(str1):\n    count = 0\n    for _ in str1:\n        count += 1\n"
               "    return count\n"],
    test_code="assert string_length('python') == 6\nassert string_length('ab') == 2\n",
)


def test_the_manifest_counts_drops_by_kind(tmp_path: Path) -> None:
    honest = [p for p in builtin_problems() if p.task_id in {"builtin/transpose", "builtin/pascal_row"}]
    copy = STRLEN.model_copy(update={"task_id": "mine/copy", "source": "mine"})
    ours = LENGTH.model_copy(update={"task_id": "builtin/length", "source": "builtin"})  # text check only
    train = write_problem_records([*honest, LENGTH, copy, ours], tmp_path / "train.jsonl")
    bench = write_problem_records([STRLEN], tmp_path / "bench.jsonl")
    overrides = {"data.train": [str(train)], "data.heldout": "synthetic:heldout",
                 "data.decontamination.public": False, "data.decontamination.against": [str(bench)],
                 "data.decontamination.scan_secrets": False}
    manifest = prepare_data(load_config(TrainingConfig, tiny_config(tmp_path), overrides=overrides)).manifest
    kinds = {row["task_id"]: (row["kind"], row["match"]["task_id"]) for row in manifest["dropped"]}
    assert kinds == {"mine/length": ("behaviour", "bench/strlen"), "mine/copy": ("exact", "bench/strlen")}
    assert manifest["dropped_by_kind"] == {"behaviour": 1, "exact": 1}
    assert manifest["train"]["count"] == len(honest) + 1
