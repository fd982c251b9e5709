"""The README's results tables hold to their result files: every figure there is a figure of a file.

A row names its files: each benchmark script it names (`x.py` -> benchmarks/results/x*.json) and each path
under benchmarks/results/ it names (a file, or a folder and every JSON below it). Every figure in the row's
other cells must equal, at the precision shown, a number in those files (for a percentage, or that number
times 100),
outside lists of more than 20 values (curves, samples). Integers below 10 (seeds, cores, rounds), labels such
as pass@1 or r=8, and anything in backticks (names, ids, paths) are not figures.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
SECTION = "## Results, by machine"
LONG_LIST = 20  # longer lists are curves and samples, where any number turns up somewhere
NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)*(?:e-?\d+)?")


def results_rows(readme: str) -> list[str]:
    """The table rows of the results section (header and separator rows left out)."""
    section = readme.split(SECTION, 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    return [r for r in rows if not re.fullmatch(r"\|[\s|:-]+\|", r) and not _is_header(r, rows)]


def _is_header(row: str, rows: list[str]) -> bool:
    following = rows.index(row) + 1
    return following < len(rows) and re.fullmatch(r"\|[\s|:-]+\|", rows[following]) is not None


def row_files(row: str) -> list[Path]:
    files: set[Path] = set()
    for name in re.findall(r"`([^`]+)`", row):
        if name.endswith(".py"):
            files.update(RESULTS.glob(f"{Path(name).stem}*.json"))
        elif name.startswith("benchmarks/results/"):
            path = ROOT / name
            files.update(path.rglob("*.json") if path.is_dir() else [path])
    return sorted(files)


class Figure(NamedTuple):
    start: int  # where in the row
    end: int
    token: str
    percent: bool  # shown as a percentage: the file may hold it as a fraction


def row_figures(row: str) -> list[Figure]:
    """The figures of a row's cells after the first; names, ids and paths in backticks are not figures."""
    text = re.sub(r"`[^`]*`", lambda m: " " * len(m.group()), row)
    first_cell_end = text.index("|", 1)
    found = []
    for match in NUMBER.finditer(text, first_cell_end):
        token = match.group().rstrip(",")
        before = text[match.start() - 1]
        after = text[match.start() + len(token):match.start() + len(token) + 8]
        label = before.isalnum() or before in "@=_." or (after[:1].isalpha() and after[:1] != "x")
        if label or token.count(".") > 1:
            continue  # pass@1, r=8, Qwen2, 4.5M, versions: labels, not figures
        value = float(token.replace(",", ""))
        if "." in token or "e" in token or value >= 10:
            percent = re.match(r"%|-[\d.]+%", after) is not None  # 66%, 1.2-2.25%
            found.append(Figure(match.start(), match.start() + len(token), token, percent))
    return found


def numbers(node: object) -> Iterator[float]:
    if isinstance(node, bool):
        return
    if isinstance(node, int | float):
        yield float(node)
    elif isinstance(node, dict):
        for value in node.values():
            yield from numbers(value)
    elif isinstance(node, list) and len(node) <= LONG_LIST:
        for value in node:
            yield from numbers(value)


def backed(figure: Figure, values: list[float]) -> bool:
    token = figure.token.replace(",", "")
    shown = abs(float(token))
    mantissa, _, exponent = token.partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    slack = 0.5 * 10 ** (int(exponent or 0) - decimals) + 1e-12
    scales = (1, 100) if figure.percent else (1,)
    return any(abs(abs(v) * k - shown) <= slack for v in values for k in scales)


def unbacked(readme: str) -> list[str]:
    """One line per row with no result file, and per figure no file of its row holds."""
    problems = []
    for row in results_rows(readme):
        files = row_files(row)
        label = row.strip("|").split("|")[0].strip()
        if not files:
            problems.append(f"{label}: names no result file")
            continue
        values = [v for f in files for v in numbers(json.loads(f.read_text()))]
        problems += [f"{label}: {fig.token} is in none of {[f.name for f in files]}"
                     for fig in row_figures(row) if not backed(fig, values)]
    return problems


@pytest.fixture(scope="module")
def readme() -> str:
    return (ROOT / "README.md").read_text()


def test_every_readme_figure_is_in_its_result_file(readme) -> None:
    assert results_rows(readme), "the README has no results table"
    assert unbacked(readme) == []


def test_a_changed_figure_fails(readme) -> None:
    """Each figure, changed by a third and shown at the same precision, is caught (a few may collide)."""
    caught = total = 0
    for row in results_rows(readme):
        for fig in row_figures(row):
            token = fig.token.replace(",", "")
            mantissa, _, exponent = token.partition("e")
            decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
            value = float(mantissa) * 1.33 + 10**-decimals  # moves a zero too
            changed = f"{value:.{decimals}f}" + (f"e{exponent}" if exponent else "")
            total += 1
            caught += bool(unbacked(readme.replace(row, row[:fig.start] + changed + row[fig.end:])))
    assert total >= 20 and caught / total >= 0.9, f"{caught}/{total} changed figures caught"


def test_a_row_without_a_file_fails(readme) -> None:
    row = results_rows(readme)[0]
    assert unbacked(readme.replace(row, re.sub(r"`[^`]+`", "`nothing`", row)))
