"""Every path that the READMEs, docs/*.md and the docstrings under src/ name exists: the map cannot go stale.

What counts as a named path (the rule):

- where: a word of an inline code span or of a fenced block that is not python or yaml (those run in
  tests/test_extending_guide.py and tests/test_docs_load.py), in a doc or in any docstring (module, class or
  function) under src/; and a markdown link's target.
- which words: relative paths, that is words with a ``/`` and without ``:`` (``models:/NAME/1``,
  ``local:/path``, URLs), not starting with ``/``, ``~``, ``$`` or ``-``, whose first segment is a top-level
  folder of the repository, or whose last segment has a file extension, or that name a folder (a trailing
  ``/``) of ``coding_framework``. Metric names (``losses/approx_kl``, ``training/rollout_probs_diff_max``)
  are none of these.
  ``python -m NAME`` names a module of this repository (``benchmarks.training.x``:
  ``benchmarks/training/x.py`` or its package); another project's (``vllm.entrypoints...``) is not checked.
- not checked: placeholders (``<run-dir>/mlflow.db``, ``path/to/mbpp.json``) and what the repository's
  .gitignore ignores (``runs/...``, ``mlruns/``: a run writes them; they never exist in a checkout).
- where it may lie: at the repository root; as the tail of a tracked path, which is how a doc names a file
  relative to the package or to a package inside it (``training/rollouts/scoring.py``, ``engines/base.py``,
  ``training/real_model_rl.py`` among the benchmarks); inside the installed package its first segment names
  (``verl/trainer/config/ppo_trainer.yaml``). ``{a,b}`` names both, a ``*`` must match something. A link's
  target is relative to the doc's folder, as markdown reads it.
"""

from __future__ import annotations

import ast
import fnmatch
import importlib.util
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "coding_framework"
DOCS = [ROOT / "README.md", ROOT / "benchmarks" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

TRACKED_FILES = frozenset(
    subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
)
TRACKED = TRACKED_FILES | {p.as_posix() for f in TRACKED_FILES for p in Path(f).parents if p.parts}
TOP_LEVEL = frozenset(p.split("/", 1)[0] for p in TRACKED_FILES if "/" in p)
SUBPACKAGES = frozenset(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())
SUBPACKAGES |= {PACKAGE.name}
EXTENSION = re.compile(r"\.(py|md|ya?ml|jsonl?|sh|toml|txt|ipynb|png|csv|parquet|safetensors|pt|db|html)$")
PLACEHOLDER = re.compile(r"[<>$]|^path/to/")

INLINE = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)
FENCE = re.compile(r"^[ \t]*```([\w-]*)[ \t]*\n(.*?)^[ \t]*```", re.MULTILINE | re.DOTALL)
LINK = re.compile(r"\]\(([^)\s#]+)")
MODULE = re.compile(r"python -m\s+([\w.<>-]+)")
EXECUTED_ELSEWHERE = {"python", "py", "yaml", "yml"}
Kind = Literal["path", "link", "module"]


@dataclass(frozen=True)
class Named:
    """A path as a text names it: where (file and line), the word, and whether it is a path, a markdown
    link's target or a ``python -m`` module (``benchmarks/serving/stats``: a module or a package)."""

    where: str
    line: int
    word: str
    kind: Kind = "path"

    def __str__(self) -> str:
        word = f"python -m {self.word.replace('/', '.')}" if self.kind == "module" else self.word
        return f"{self.where}:{self.line}: {word}"


def _ours(first: str) -> bool:
    return first in TOP_LEVEL or first == "coding_framework"


def is_path(word: str) -> bool:
    if "/" not in word or ":" in word or word.startswith(("/", "~", "$", "-")):
        return False
    first = word.split("/", 1)[0]
    if first in TOP_LEVEL:
        return True
    return bool(EXTENSION.search(word.rstrip("/"))) or (first in SUBPACKAGES and word.endswith("/"))


def _words(text: str) -> Iterator[tuple[int, str]]:
    """(offset, word) for each word of ``text``, without the punctuation around it."""
    for m in re.finditer(r"\S+", text):
        word = m.group().strip(".,;()[]\"'")
        if word:
            yield m.start(), word


def named_in(text: str, where: str, first_line: int = 1, markdown: bool = True) -> list[Named]:
    """The paths ``text`` names (see the module docstring); a docstring is read as markdown without fences."""

    def line(offset: int) -> int:
        return first_line + text.count("\n", 0, offset)

    spans: list[tuple[int, str]] = []
    fenced = list(FENCE.finditer(text)) if markdown else []
    for block in fenced:
        if block.group(1).lower() not in EXECUTED_ELSEWHERE:
            spans.append((block.start(2), block.group(2)))
    prose = text
    for block in reversed(fenced):  # keep offsets: blank the fenced text out of the prose
        prose = prose[: block.start()] + re.sub(r"[^\n]", " ", block.group()) + prose[block.end():]
    spans += [(m.start(2), m.group(2)) for m in INLINE.finditer(prose)]
    found = []
    for start, span in spans:
        found += [Named(where, line(start + off), w) for off, w in _words(span) if is_path(w)]
        found += [Named(where, line(start + m.start(1)), m.group(1).rstrip(".").replace(".", "/"), "module")
                  for m in MODULE.finditer(span) if _ours(m.group(1).split(".", 1)[0])]
    if markdown:
        found += [Named(where, line(m.start(1)), m.group(1), "link") for m in LINK.finditer(prose)
                  if not m.group(1).startswith(("http://", "https://", "mailto:"))]
    return found


def named_in_docstrings(path: Path, where: str) -> list[Named]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                found += named_in(first.value.value, where, first.lineno, markdown=False)
    return found


def _alternatives(word: str) -> list[str]:
    braces = re.search(r"\{([^{}]*)\}", word)
    if braces is None:
        return [word]
    return [alt for choice in braces.group(1).split(",")
            for alt in _alternatives(word[: braces.start()] + choice + word[braces.end():])]


def _tracked(path: str) -> bool:
    """At the root, or as the tail of a tracked path."""
    if "*" in path:
        return any(fnmatch.fnmatch(t, path) or fnmatch.fnmatch(t, f"*/{path}") for t in TRACKED)
    return path in TRACKED or any(t.endswith(f"/{path}") for t in TRACKED)


def _installed(path: str) -> bool:
    """Inside the installed package (not this repository's) that its first segment names."""
    first, _, rest = path.partition("/")
    if not first.isidentifier() or first in SUBPACKAGES or first in TOP_LEVEL:
        return False
    spec = importlib.util.find_spec(first)
    return bool(spec and spec.submodule_search_locations and rest
                and any((Path(loc) / rest).exists() for loc in spec.submodule_search_locations))


def _ignored(paths: list[str]) -> set[str]:
    """The ones the repository's .gitignore ignores."""
    done = subprocess.run(["git", "check-ignore", "--no-index", "--stdin"], cwd=ROOT, input="\n".join(paths),
                          capture_output=True, text=True)
    return set(done.stdout.split())


def missing(named: list[Named], doc_dir: Path = ROOT) -> list[Named]:
    """The ones of ``named`` that do not exist (links resolve from ``doc_dir``)."""
    checked = [n for n in named if not PLACEHOLDER.search(n.word)]
    ignored = _ignored([n.word.rstrip("/") for n in checked if n.kind == "path"])
    stale = []
    for n in checked:
        if n.kind == "link":
            target = (doc_dir / n.word).resolve()
            exists = target.is_relative_to(ROOT) and target.exists()
        elif n.kind == "module":
            exists = _tracked(f"{n.word}.py") or _tracked(f"{n.word}/__init__.py")
        else:
            word = n.word.rstrip("/")
            exists = word in ignored or all(_tracked(p) or _installed(p) for p in _alternatives(word))
        if not exists:
            stale.append(n)
    return stale


def _report(stale: list[Named]) -> str:
    return "paths that do not exist in the repository:\n" + "\n".join(f"  {n}" for n in stale)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_path_a_doc_names_exists(doc: Path) -> None:
    named = named_in(doc.read_text(encoding="utf-8"), doc.relative_to(ROOT).as_posix())
    assert named, f"{doc.name} names no path: the rule no longer finds them"
    stale = missing(named, doc.parent)
    assert not stale, _report(stale)


def test_every_path_a_docstring_under_src_names_exists() -> None:
    named = [n for path in sorted(PACKAGE.rglob("*.py"))
             for n in named_in_docstrings(path, path.relative_to(ROOT).as_posix())]
    assert named, "the docstrings name no path: the rule no longer finds them"
    stale = missing(named)
    assert not stale, _report(stale)


PLANTED = """# A doc

The step runs in `training/scoring.py` and `src/coding_framework/training/trainer.py`; see
[the guide](extending.md) and [old notes](docs/old_notes.md).

```bash
python -m benchmarks.machine --quick
python scripts/no_such_script.py --out runs/mine/out.json
```

Moved: `benchmarks/serving_stats.py`, `sandbox/backends/{bwrap,lxc}.py`, `benchmarks/results/*.nope`.
Fine: `training/rollouts/scoring.py`, `engines/base.py`, `sandbox/backends/{bwrap,docker}.py`,
`<run-dir>/mlflow.db`, `path/to/mbpp.json`, `runs/x/config.yaml`, `losses/approx_kl`, `models:/NAME/1`,
`verl/trainer/config/ppo_trainer.yaml`, `benchmarks/results/*.json`, `python -m benchmarks.serving.stats`,
`python -m benchmarks.grading.<name>`.
"""


def test_a_stale_path_fails_and_the_other_kinds_of_word_pass() -> None:
    stale = missing(named_in(PLANTED, "planted.md"), ROOT / "docs")
    assert sorted((n.line, n.word) for n in stale) == [
        (3, "training/scoring.py"), (4, "docs/old_notes.md"), (7, "benchmarks/machine"),
        (8, "scripts/no_such_script.py"), (11, "benchmarks/results/*.nope"),
        (11, "benchmarks/serving_stats.py"), (11, "sandbox/backends/{bwrap,lxc}.py"),
    ]


def test_a_docstring_path_is_found_on_its_line(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('"""Top."""\n\n\ndef f() -> None:\n    """Reads\n    ``training/scoring.py``."""\n')
    [named] = named_in_docstrings(module, "m.py")
    assert (named.line, named.word) == (6, "training/scoring.py")
    assert missing([named]) == [named]


@pytest.mark.parametrize("script", sorted((ROOT / "scripts").glob("*.py")), ids=lambda p: p.name)
def test_every_python_script_answers_help(script: Path) -> None:
    done = subprocess.run([sys.executable, str(script), "--help"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and "usage" in done.stdout.lower(), done.stderr
