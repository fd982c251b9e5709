"""Every ```python block of docs/extending.md compiles and runs: an example that drifts from the code fails.

The blocks of one `## ` section run in order, as one fresh module (a module block first, then the lines
that use it), in a temporary working directory. A traceback names the guide's own line. What a section
registers (an algorithm, an estimator, a reward, ...) is removed after it, so the other tests see the
registries as shipped. The guide's ```yaml blocks load in tests/test_docs_load.py.
"""

from __future__ import annotations

import re
import sys
import traceback
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from verl.trainer.ppo import core_algos

from coding_framework.problems._families import FAMILIES
from coding_framework.problems.benchmarks import BENCHMARKS
from coding_framework.rewards import REWARDS
from coding_framework.sandbox.backends import BACKENDS
from coding_framework.training.algos.algorithms import ALGORITHMS
from coding_framework.training.rollouts.engines import ROLLOUT_ENGINES

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "extending.md"
FENCE = re.compile(r"^```(\w*)[ \t]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
HEADING = re.compile(r"^## (.+)$", re.MULTILINE)
REGISTRIES: list[dict[str, Any]] = [
    ALGORITHMS, REWARDS, BENCHMARKS, FAMILIES, BACKENDS, ROLLOUT_ENGINES,
    core_algos.ADV_ESTIMATOR_REGISTRY, core_algos.POLICY_LOSS_REGISTRY,
]
EXTENSION_POINTS = ("algorithm", "loss", "reward", "benchmark", "rollout engine", "sandbox backend",
                    "guardrail")


@dataclass(frozen=True)
class Block:
    """One ```python block: its section's heading, the line its code starts on, and the code."""

    section: str
    line: int
    code: str


def python_blocks(text: str) -> list[Block]:
    headings = [(m.start(), m.group(1)) for m in HEADING.finditer(text)]
    blocks = []
    for m in FENCE.finditer(text):
        if m.group(1) == "python":
            section = next((h for start, h in reversed(headings) if start < m.start()), "")
            blocks.append(Block(section, text.count("\n", 0, m.start(2)) + 1, m.group(2)))
    return blocks


def sections(blocks: list[Block]) -> dict[str, list[Block]]:
    found: dict[str, list[Block]] = {}
    for block in blocks:
        found.setdefault(block.section, []).append(block)
    return found


def run_section(blocks: list[Block], filename: str) -> types.ModuleType:
    """Run ``blocks`` in order as one new module; line numbers in a traceback are ``filename``'s."""
    module = types.ModuleType(f"extending_guide_{blocks[0].line}")
    sys.modules[module.__name__] = module  # dataclasses and pydantic look their module up
    try:
        for block in blocks:
            exec(compile("\n" * (block.line - 1) + block.code, filename, "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    return module


BLOCKS = python_blocks(GUIDE.read_text(encoding="utf-8"))
SECTIONS = sections(BLOCKS)


@pytest.fixture
def registries_as_shipped() -> Iterator[None]:
    saved = [(registry, dict(registry)) for registry in REGISTRIES]
    yield
    for registry, entries in saved:
        registry.clear()
        registry.update(entries)


def test_every_extension_point_has_a_section_with_a_runnable_example() -> None:
    headings = [h.lower() for h in SECTIONS]
    missing = [point for point in EXTENSION_POINTS if not any(point in h for h in headings)]
    assert not missing, f"docs/extending.md has no example for: {missing}"


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: f"line{b.line}")
def test_every_python_block_compiles(block: Block) -> None:
    compile(block.code, f"docs/extending.md:{block.line}", "exec")


@pytest.mark.parametrize("section", SECTIONS, ids=str)
def test_the_examples_of_a_section_run(section: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       registries_as_shipped: None) -> None:
    monkeypatch.chdir(tmp_path)
    run_section(SECTIONS[section], "docs/extending.md")


def test_a_drifted_example_fails_on_its_own_line(registries_as_shipped: None) -> None:
    guide = ("# Guide\n\n## A reward\n\nIt goes in `rewards/`:\n\n```python\n"
             "from coding_framework.rewards import register_reward\n\nSCALE = 2\n```\n\nThen:\n\n```python\n"
             "assert SCALE == 2\nfrom coding_framework.rewards import BrevityReward\n```\n\n"
             "```yaml\n# config: TrainingConfig\n```\n")
    [(section, blocks)] = sections(python_blocks(guide)).items()
    assert section == "A reward" and [b.line for b in blocks] == [8, 16]
    with pytest.raises(ImportError, match="BrevityReward") as failure:
        run_section(blocks, "guide.md")
    where = traceback.extract_tb(failure.value.__traceback__)[-1]
    assert (where.filename, where.lineno) == ("guide.md", 17)
