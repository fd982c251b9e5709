"""Every ```yaml block in README.md and docs/*.md loads through the config loader its marker names.

A block's first line says what it is: `# config: <Model>`, a config model that `coding_framework.config`
exports, loaded with `load_config(<Model>, ...)` as a user's file would be (a fragment is a partial file: the
keys it leaves out keep their defaults), so an unknown or misspelt key fails here; or `# config: external
(...)`, another program's file (Prometheus's scrape config), which need only be YAML.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel

import coding_framework.config as config_package
from coding_framework.config import ConfigError, TrainingConfig, load_config

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^[ \t]*```ya?ml[ \t]*\n(.*?)^[ \t]*```", re.MULTILINE | re.DOTALL)
MARKER = re.compile(r"#\s*config:\s*(\w+)")
EXTERNAL = "external"


@dataclass(frozen=True)
class Block:
    """One ```yaml block: where it is (file and the line of its fence) and its text."""

    doc: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}"

    @property
    def model(self) -> str | None:
        """The name its `# config:` marker gives, or None without one."""
        first = self.text.lstrip().split("\n", 1)[0]
        found = MARKER.match(first)
        return found.group(1) if found else None


def yaml_blocks(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    doc = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
    return [Block(doc, text.count("\n", 0, m.start()) + 1, m.group(1)) for m in FENCE.finditer(text)]


# The config models a marker may name: every pydantic model `coding_framework.config` exports.
MODELS: dict[str, type[BaseModel]] = {
    name: obj for name in config_package.__all__
    if isinstance(obj := getattr(config_package, name), type) and issubclass(obj, BaseModel)
}


def load_block(block: Block, tmp_path: Path) -> BaseModel | None:
    """The config ``block`` loads into (None for an external file); raises if it does not load."""
    name = block.model
    if name is None or (name != EXTERNAL and name not in MODELS):
        raise AssertionError(f"{block}: a yaml block must start with '# config: <Model>' (one of "
                             f"{', '.join(MODELS)}) or '# config: {EXTERNAL} (<whose file>)'")
    if name == EXTERNAL:
        assert isinstance(yaml.safe_load(block.text), dict), f"{block}: not a YAML mapping"
        return None
    path = tmp_path / "block.yaml"
    path.write_text(block.text, encoding="utf-8")
    return load_config(MODELS[name], path)


BLOCKS = [block for doc in DOCS for block in yaml_blocks(doc)]


@pytest.mark.parametrize("block", BLOCKS, ids=str)
def test_every_yaml_block_in_the_docs_loads(block: Block, tmp_path: Path) -> None:
    load_block(block, tmp_path)


def test_the_trust_tier_opt_in_is_a_block_that_turns_it_on(tmp_path: Path) -> None:
    [block] = [b for b in BLOCKS if b.doc == "docs/trust_tiers.md"]
    loaded = load_block(block, tmp_path)
    assert isinstance(loaded, TrainingConfig) and loaded.reward.function.allow_in_process_tier


def test_an_unknown_key_or_a_missing_marker_fails(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("Opt in:\n\n```yaml\n# config: TrainingConfig\nrewards:\n  allow_in_process_tier: true\n"
                   "```\n\n```yml\nseed: 1\n```\n\n```yaml\n# config: TrainingConf\nseed: 1\n```\n")
    typo, unmarked, misnamed = yaml_blocks(doc)
    assert [(str(b), b.model) for b in (typo, unmarked, misnamed)] == [
        ("doc.md:3", "TrainingConfig"), ("doc.md:9", None), ("doc.md:13", "TrainingConf")]
    with pytest.raises(ConfigError, match=r"rewards: Extra inputs are not permitted \(unknown key"):
        load_block(typo, tmp_path)
    for bad in (unmarked, misnamed):
        with pytest.raises(AssertionError, match=r"must start with '# config: <Model>' \(one of Agents"):
            load_block(bad, tmp_path)
