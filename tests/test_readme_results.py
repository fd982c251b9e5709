"""The README's figures hold to their result files: every figure there is one key of one file, or a label.

Each figure of a results row (every number in the cells after the first, signs and small integers included)
is bound, in `benchmarks/readme_figures.yaml`, to the exact key it comes from, and must equal that key's
value at the precision shown. The README stays plain prose; the side table holds only where each figure comes
from, never the figure itself, so a changed figure fails here rather than being copied into two places.

Not figures: labels glued to a letter or to @, = or _ (pass@1, r=8, K=0, fp32, Qwen2.5, 4.5M, H100), version
numbers (0.3.1), and anything in backticks (names, ids, paths).

The side table lists the results rows in README order; for each, `row:` (a piece of its first cell, so a
reader can find it) and `figures:`, one entry per figure in the order they appear in the row:

- `file.json#/json/pointer`: the file under benchmarks/results and an RFC 6901 pointer into it (list items by
  index; `~1` stands for `/` and `~0` for `~` in a key). The value must round to the figure as shown: 0.185
  matches 0.18496, and a sign shown (+0.139, -3) must be the value's sign; no sign shown needs a value >= 0.
- after the pointer, ` | len` (a list's or an object's size: "0 disagreements" is `.../disagreements | len`),
  ` | sum`, ` | min` or ` | max` over the values a `*` in the pointer stands for (`#/aa/*/fpr | max`), and
  ` | *100` where the file holds a fraction the README shows as a percentage or as points, or ` | *N` where
  it holds a rate over N the text shows as a count (46 of "46/136" is `#/arms/a/pass_rate | *136`), and
  ` | 1-` for the rest of a fraction (the same-task problems a detector keeps are `#/.../recall | 1-`).
- several bindings joined by ` & `: one figure that stands for each of them ("30 tasks each").
- `name: why` or `setting: why`, the only unbound numbers: one that names something (seed 2, step 3, HTTP
  404, a version) or one that states a setting (a config value, a command-line option, a target the code is
  held to). The reason is required and kept short. A number that is neither, measured but with no result
  file, has no place in these documents: rewrite the sentence or file the result.
- Numbers written as words are figures too ("two", "half", "twice"): see `WORDS` for the ones counted.

A ratio (a figure followed by x or %) bound to a file whose load average before or during the run was 1.0
or more (2 cores: another job shared the CPU) carries, in its clause, the marker "(loaded: load average B
before, D during)", its two figures bound to that file's `load_avg`; a quiet re-run drops it.

No results-table figure is bound to a file benchmarks/results_history.yaml lists (filed before its run record
was complete, or summed up from such files): those rows stand in the README's "History (not reproducible
here)" table, bound the same way under `README.md history:`, each naming in its last cell a listed file it
binds; a History row that binds no listed file belongs in the results tables again.

The rest of README.md (paragraphs, list items and tables outside those two sections), benchmarks/README.md and
every doc under docs/ (DOCUMENTS) are bound block by block, under `README.md prose:`,
`benchmarks/README.md:` and each doc's path: each block that
holds a number, in order, as `block:` (a piece of its text) and `figures:` in the forms above, or `unbound:
why` for a block not bound yet (a row whose result is still being filed), which the self-test skips; the
documents bound in full (`FULLY_BOUND`) refuse `unbound:`. A figure no result file holds has no place in
these documents.

How to bind a new row (say for `real_model_rl.py`; benchmarks/README.md says the same): file the result
with `write_result` and write the row in README.md; add the row to benchmarks/readme_figures.yaml at its
place in README order, one entry per figure, each naming the key the figure was read from; run this test.
A row whose figure count differs is reported with its figures in order, and a figure its key does not round
to with the key's value. `test_every_bound_figure_perturbed_is_caught` then checks that each new figure,
changed by a third, with one digit changed or with its sign flipped, fails.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
BINDINGS = ROOT / "benchmarks" / "readme_figures.yaml"
HISTORY_LIST = ROOT / "benchmarks" / "results_history.yaml"
SECTION = "## Results, by machine"
HISTORY = "## History (not reproducible here)"
# A number with its sign, where no letter, digit or point comes before the sign (1.2-2.25% is a range);
# 1,640 and 3.0e-06 are one number each.
NUMBER = re.compile(r"(?:(?<![\w.])[+-])?\d[\d,]*(?:\.\d+)*(?:e-?\d+)?")
# Numbers written as words are figures too, each standing for its numeral at that precision. Not counted:
# "one", which here is nearly always an article or a pronoun ("one policy", "one of them"), ordinals (first,
# second, third) and vague quantities (few, several, many).
_COUNTS = ("two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
           "seventeen eighteen nineteen twenty")
WORDS = {"zero": "0", **{word: str(n) for n, word in enumerate(_COUNTS.split(), 2)},
         "dozen": "12", "hundred": "100", "thousand": "1000",
         "half": "0.5", "twice": "2", "double": "2", "triple": "3"}
WORD = re.compile(r"\b(?:" + "|".join(WORDS) + r")\b", re.IGNORECASE)
# An unbound number is a label of one of these kinds, with its why: a name (seed 2, step 3, HTTP 404, a
# version) or a setting (a config value, a command-line option, a target the code is held to).
LABELS = ("name:", "setting:")


def results_rows(readme: str, heading: str = SECTION) -> list[str]:
    """The table rows of the section under ``heading`` (header and separator rows left out)."""
    section = readme.split(heading + "\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    return [r for r in rows if not re.fullmatch(r"\|[\s|:-]+\|", r) and not _is_header(r, rows)]


def _is_header(row: str, rows: list[str]) -> bool:
    following = rows.index(row) + 1
    return following < len(rows) and re.fullmatch(r"\|[\s|:-]+\|", rows[following]) is not None


class Figure(NamedTuple):
    start: int  # where in the row
    end: int
    token: str  # as shown, sign included: "+0.139", "1,640", "3.0e-06", or a word: "two", "half"


def numeral(token: str) -> str:
    """The figure in digits: a word's numeral ("two" -> "2", "half" -> "0.5"), else the token itself."""
    return WORDS.get(token.lower(), token)


def is_label(entry: str) -> bool:
    return entry.startswith(LABELS)


def row_figures(row: str) -> list[Figure]:
    """The figures of a row's cells after the first; names, ids and paths in backticks are not figures."""
    return block_figures(row, row.index("|", 1))


def block_figures(block: str, start: int = 0) -> list[Figure]:
    """The figures of ``block`` from ``start`` on; names, ids and paths in backticks are not figures."""
    text = re.sub(r"`[^`]*`", lambda m: " " * len(m.group()), block)
    found = []
    for match in NUMBER.finditer(text, start):
        token = match.group().rstrip(",")
        digits = token.lstrip("+-")
        before = text[match.start() - 1]
        after = text[match.start() + len(token):match.start() + len(token) + 1]
        glued = before.isalnum() or before in "@=_." or (after.isalpha() and after != "x")
        if glued or digits.count(".") > 1:
            continue  # pass@1, r=8, Qwen2, 4.5M, versions: labels, not figures
        found.append(Figure(match.start(), match.start() + len(token), token))
    found += [Figure(m.start(), m.end(), m.group()) for m in WORD.finditer(text, start)]
    return sorted(found)


@functools.cache
def _load(name: str) -> Any:
    return json.loads((RESULTS / name).read_text())


REDUCE = {"len": len, "sum": sum, "min": min, "max": max}


def lookup(binding: str) -> list[float]:
    """The values a binding ``file.json#/pointer[ | reducer][ | *100]`` names, one per `` & ``-joined part."""
    values = []
    for part in binding.split(" & "):
        where, *steps = (s.strip() for s in part.split(" | "))
        name, _, pointer = where.partition("#")
        nodes: list[Any] = [_load(name)]
        for key in pointer.split("/")[1:]:
            key = key.replace("~1", "/").replace("~0", "~")
            nodes = [c for n in nodes for c in ((n.values() if isinstance(n, dict) else n) if key == "*"
                                                else [n[int(key)] if isinstance(n, list) else n[key]])]
        scale, complement = 1.0, False
        for step in steps:
            if step.startswith("*"):
                scale = float(step[1:])
            elif step == "1-":
                complement = True
            else:
                nodes = [REDUCE[step](nodes[0] if step == "len" else nodes)]
        if len(nodes) != 1 or isinstance(nodes[0], bool) or not isinstance(nodes[0], int | float):
            raise TypeError(f"{part} is {nodes!r}, not one number (a * in the pointer needs a reducer)")
        values.append((1 - float(nodes[0]) if complement else float(nodes[0])) * scale)
    return values


def shows(token: str, value: float) -> bool:
    """``value`` rounds to ``token`` at the precision shown, with the sign shown (none: not negative)."""
    digits = token.replace(",", "")
    mantissa, _, exponent = digits.lstrip("+-").partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    slack = 0.5 * 10 ** (int(exponent or 0) - decimals) * (1 + 1e-9)
    return abs(value - float(digits)) <= slack and (value > 0 if digits.startswith("+") else True)


def disowned(name: str, figures: list[Figure], entries: list[str]) -> list[str]:
    """One line if ``figures`` and ``entries`` differ in number, else one per figure its key disowns."""
    if len(figures) != len(entries):
        return [f"{name}: {len(figures)} figures {[f.token for f in figures]}, {len(entries)} bound"]
    problems = []
    for figure, entry in zip(figures, entries, strict=True):
        if is_label(entry):
            if not entry.split(":", 1)[1].strip():
                problems.append(f"{name}: {figure.token} is a label without its why")
            continue
        if ".json#" not in entry:
            problems.append(f"{name}: {figure.token} is bound as {entry!r}: neither file.json#/pointer nor a "
                            f"label ({', '.join(LABELS)} why); a figure that is neither needs a record")
            continue
        try:
            values = lookup(entry)
        except (OSError, KeyError, IndexError, ValueError, TypeError) as exc:
            problems.append(f"{name}: {figure.token} bound to {entry}: {exc!r}")
            continue
        if not all(shows(numeral(figure.token), value) for value in values):
            problems.append(f"{name}: {figure.token} is not {entry} ({values})")
    return problems


def unbacked(readme: str, bindings: list[dict[str, Any]], heading: str = SECTION) -> list[str]:
    """One line per row whose figures and bindings disagree in number, and per figure its key disowns."""
    rows = results_rows(readme, heading)
    problems = [] if len(rows) == len(bindings) else [f"{len(rows)} results rows, {len(bindings)} bound"]
    for row, bound in zip(rows, bindings, strict=False):
        label = row.strip("|").split("|")[0].strip()
        if bound["row"] not in label:
            problems.append(f"row {label[:60]!r} is bound as {bound['row']!r}: keep the rows in README order")
        else:
            problems += disowned(bound["row"], row_figures(row), bound["figures"])
    return problems


def blocks(doc: str) -> list[tuple[str, int]]:
    """(block, where its figures start) for each paragraph, list item and table row of ``doc`` that holds a
    figure, outside code fences, headings and the row-bound sections' tables (``ROW_BOUND``); a row's figures
    start after its first cell. Each block is its exact text in ``doc``, lines joined by newlines."""
    found: list[list[str]] = []
    fenced, joinable, row_bound = False, False, False
    for line in doc.splitlines():
        if line.startswith("```"):
            fenced, joinable = not fenced, False
        elif fenced or not line.strip() or line.startswith("#"):
            if not fenced and line.startswith("## "):
                row_bound = line in ROW_BOUND
            joinable = False
        elif line.startswith("|"):
            if re.fullmatch(r"\|[\s|:-]+\|", line):
                if not row_bound and found and found[-1][0].startswith("|"):
                    found.pop()  # the header row above a separator names columns
            elif not row_bound:
                found.append([line])
            joinable = False
        elif joinable and not re.match(r"\s*(?:[-*]|\d+\.) ", line):
            found[-1].append(line)
        else:
            found.append([line])
            joinable = True
    out = []
    for lines in found:
        block = "\n".join(lines)
        start = block.index("|", 1) if block.startswith("|") else 0
        if block_figures(block, start):
            out.append((block, start))
    return out


# The documents bound block by block: name -> file. README.md's results and History rows are bound row by row
# instead; every other table row, paragraph and list item of README.md, benchmarks/README.md and every doc
# under docs/ is a block (a new doc is covered the moment it exists).
DOCUMENTS = {
    "README.md prose": "README.md",
    "benchmarks/README.md": "benchmarks/README.md",
    **{f"docs/{path.name}": f"docs/{path.name}" for path in sorted((ROOT / "docs").glob("*.md"))},
}
ROW_BOUND = (SECTION, HISTORY)
# Documents whose every block is bound: an `unbound:` entry there fails.
FULLY_BOUND = ("docs/real_model.md", "docs/serving_operations.md", "docs/serving_per_role.md")


def unbacked_blocks(doc: str, entries: list[dict[str, Any]], unbound_ok: bool = True) -> list[str]:
    """As ``unbacked`` for every block of ``doc`` that holds a figure, in order: each entry's ``block`` is a
    piece of its block's text, then ``figures``, or ``unbound: why`` for a block not bound yet (refused
    unless ``unbound_ok``)."""
    found = blocks(doc)
    counted = f"{len(found)} blocks with figures, {len(entries)} entries"
    problems = [] if len(found) == len(entries) else [counted]
    for (block, start), entry in zip(found, entries, strict=False):
        if entry["block"] not in block:
            problems.append(f"block {block[:70]!r} is bound as {entry['block']!r}: keep the blocks in order")
            break
        if "unbound" in entry:
            if not unbound_ok:
                problems.append(f"{entry['block']}: unbound in a document bound in full (FULLY_BOUND): bind "
                                "its figures")
            elif not str(entry["unbound"]).strip():
                problems.append(f"{entry['block']}: unbound without its why")
            continue
        problems += disowned(entry["block"], block_figures(block, start), entry["figures"])
    return problems


@functools.cache
def history_files() -> frozenset[str]:
    """The result files benchmarks/results_history.yaml lists: history, or summed up from history."""
    listed = yaml.safe_load(HISTORY_LIST.read_text())
    return frozenset({*listed["history"], *(listed.get("summaries_of_history") or {})})


def bound_files(entry: str) -> set[str]:
    """The result files a binding reads (none for a label)."""
    if is_label(entry):
        return set()
    return {part.split("#", 1)[0].strip() for part in entry.split(" & ")}


def resting_on_history(bindings: list[dict[str, Any]], history: frozenset[str]) -> list[str]:
    """One line per results-table figure bound to a history file: it goes under History instead."""
    return [f"{bound['row']}: a figure bound to {sorted(bound_files(entry) & history)}, history: move the "
            f"row under {HISTORY!r}, or re-run it through write_result"
            for bound in bindings for entry in bound["figures"] if bound_files(entry) & history]


def off_the_history_list(readme: str, bindings: list[dict[str, Any]], history: frozenset[str]) -> list[str]:
    """One line per History row that binds no listed file (it belongs in the results tables again) or whose
    last cell, the why, names none of the listed files it binds."""
    problems = []
    for row, bound in zip(results_rows(readme, HISTORY), bindings, strict=True):
        files = {name for entry in bound["figures"] for name in bound_files(entry)} & history
        why = row.strip().strip("|").rsplit("|", 1)[-1]
        if not files:
            problems.append(f"{bound['row']}: binds no file {HISTORY_LIST.name} lists: move it back")
        elif not any(f"`{name}`" in why for name in files):
            problems.append(f"{bound['row']}: its last cell names none of {sorted(files)}, what it lacks")
    return problems


LOADED = 1.0  # a 1-minute load average at or above this, before or during, on 2 cores: a shared CPU
MARKER = "(loaded: "


def loaded(name: str) -> bool:
    """Whether the result file records a loaded machine before or during its run."""
    load = _load(name).get("load_avg") or {}
    return any(load.get(k) is not None and load[k] >= LOADED for k in ("before", "during_mean"))


def unmarked_loaded_ratios(readme: str, bindings: list[dict[str, Any]], heading: str = SECTION) -> list[str]:
    """Ratios (a figure followed by x or %) bound to a file that records a loaded machine, without the
    marker ``(loaded: load average B before, D during)`` later in the same clause (up to the next ; or |)."""
    problems = []
    for row, bound in zip(results_rows(readme, heading), bindings, strict=True):
        for figure, entry in zip(row_figures(row), bound["figures"], strict=True):
            if is_label(entry) or row[figure.end:figure.end + 1] not in ("x", "%"):
                continue
            files = {part.split("#", 1)[0].strip() for part in entry.split(" & ")}
            clause = re.split(r"[;|]", row[figure.end:], maxsplit=1)[0]
            if any(loaded(name) for name in files) and MARKER not in clause:
                problems.append(f"{bound['row']}: {figure.token} comes from a loaded run ({sorted(files)}): "
                                f"mark it {MARKER}load average B before, D during) in its clause")
    return problems


@pytest.fixture(scope="module")
def readme() -> str:
    return (ROOT / "README.md").read_text()


@pytest.fixture(scope="module")
def bindings() -> list[dict[str, Any]]:
    return yaml.safe_load(BINDINGS.read_text())["README.md"]


@pytest.fixture(scope="module")
def history_bindings() -> list[dict[str, Any]]:
    return yaml.safe_load(BINDINGS.read_text())["README.md history"]


@pytest.fixture(scope="module")
def documents() -> dict[str, tuple[str, bool, list[dict[str, Any]]]]:
    """name -> (the document's text, its block bindings)."""
    side = yaml.safe_load(BINDINGS.read_text())
    return {name: ((ROOT / path).read_text(), side.get(name, [])) for name, path in DOCUMENTS.items()}


@pytest.mark.parametrize("name", DOCUMENTS)
def test_every_figure_of_the_prose_and_benchmarks_readme_is_its_bound_key(documents, name: str) -> None:
    doc, entries = documents[name]
    assert unbacked_blocks(doc, entries, unbound_ok=name not in FULLY_BOUND) == []


def test_every_readme_figure_is_its_bound_key(readme, bindings) -> None:
    assert results_rows(readme), "the README has no results table"
    assert unbacked(readme, bindings) == []


def test_every_history_figure_is_its_bound_key(readme, history_bindings) -> None:
    assert results_rows(readme, HISTORY), "the README has no history table"
    assert unbacked(readme, history_bindings, HISTORY) == []


def test_no_results_figure_rests_on_a_history_file(bindings, history_bindings) -> None:
    """A figure in the results tables has a full record; one from a file filed before the record was complete
    (or summed up from such files) stands under History, which says so."""
    history = history_files()
    assert resting_on_history(bindings, history) == []
    figures = [e for b in bindings for e in b["figures"] if not is_label(e)]
    old = [e for b in history_bindings for e in b["figures"] if bound_files(e) & history]
    print(f"results tables: {len(figures)} bound figures, 0 from the {len(history)} history files; "
          f"History: {len(results_rows((ROOT / 'README.md').read_text(), HISTORY))} rows, {len(old)} figures")


def test_every_history_row_rests_on_a_listed_file_and_says_which(readme, history_bindings) -> None:
    assert off_the_history_list(readme, history_bindings, history_files()) == []


def test_a_history_figure_in_the_results_or_a_recorded_row_under_history_is_caught(
        readme, bindings, history_bindings) -> None:
    history = history_files()
    moved_back = [dict(bindings[0], figures=[*bindings[0]["figures"], history_bindings[0]["figures"][0]]),
                  *bindings[1:]]
    assert resting_on_history(moved_back, history)
    recorded = frozenset(history - {name for e in history_bindings[0]["figures"] for name in bound_files(e)})
    assert "binds no file" in off_the_history_list(readme, history_bindings, recorded)[0]
    row = results_rows(readme, HISTORY)[0]
    unnamed = row[:row.rstrip().rstrip("|").rindex("|")] + "| filed long ago |"
    assert "names none" in off_the_history_list(readme.replace(row, unnamed), history_bindings, history)[0]


def test_a_ratio_from_a_loaded_run_is_marked_loaded(readme, bindings, history_bindings) -> None:
    assert unmarked_loaded_ratios(readme, bindings) == []
    assert unmarked_loaded_ratios(readme, history_bindings, HISTORY) == []


def test_an_unmarked_loaded_ratio_is_caught(readme, bindings) -> None:
    row = next(r for r in results_rows(readme) if "trl_throughput.py --model smollm2-135m" in r)
    unmarked = row.replace(MARKER, "(")
    assert unmarked_loaded_ratios(readme.replace(row, unmarked), bindings)


def _perturbed(token: str) -> list[str]:
    """The figure changed by a third, with its last digit changed, and with its sign flipped (if nonzero)."""
    digits = token.replace(",", "")
    sign = digits[0] if digits[0] in "+-" else ""
    mantissa, _, exponent = digits.lstrip("+-").partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    tail = f"e{exponent}" if exponent else ""
    third = f"{float(mantissa) * 4 / 3 + 10**-decimals:.{decimals}f}"  # + one unit moves a zero too
    last = mantissa[:-1] + str((int(mantissa[-1]) + 1) % 10)
    changed = [sign + third + tail, sign + last + tail]
    if float(mantissa):
        changed.append(("-" if sign != "-" else "+") + mantissa + tail)
    return changed


def test_every_bound_figure_perturbed_is_caught(readme, bindings, history_bindings, documents) -> None:
    """Each bound figure, changed by a third, with one digit changed or with its sign flipped, fails: 100%,
    in the results and History rows and every document's blocks."""
    total, missed = 0, []
    for heading, rows_bound in ((SECTION, bindings), (HISTORY, history_bindings)):
        for row, bound in zip(results_rows(readme, heading), rows_bound, strict=True):
            for figure, entry in zip(row_figures(row), bound["figures"], strict=True):
                if is_label(entry):
                    continue
                for changed in _perturbed(numeral(figure.token)):
                    total += 1
                    perturbed = readme.replace(row, row[:figure.start] + changed + row[figure.end:])
                    if not unbacked(perturbed, rows_bound, heading):
                        missed.append(f"{bound['row']}: {figure.token} -> {changed}")
    for doc, entries in documents.values():
        for (block, start), entry in zip(blocks(doc), entries, strict=True):
            if "unbound" in entry:
                continue
            for figure, bound in zip(block_figures(block, start), entry["figures"], strict=True):
                if is_label(bound):
                    continue
                for changed in _perturbed(numeral(figure.token)):
                    total += 1
                    perturbed = doc.replace(block, block[:figure.start] + changed + block[figure.end:])
                    if not unbacked_blocks(perturbed, entries):
                        missed.append(f"{entry['block']}: {figure.token} -> {changed}")
    print(f"{total - len(missed)}/{total} perturbed figures caught")
    assert total >= 300 and missed == [], f"{len(missed)}/{total} perturbed figures passed: {missed}"


def test_a_figure_added_a_row_unbound_or_a_bare_label_fails(readme, bindings) -> None:
    row = results_rows(readme)[0]
    cells = row.rsplit("|", 2)
    assert unbacked(readme.replace(row, f"{cells[0]}| 0.5 {cells[1]}|{cells[2]}"), bindings)
    assert unbacked(readme, bindings[:-1])
    bare = [dict(b, figures=[e.split(":", 1)[0] + ":" if is_label(e) else e for e in b["figures"]])
            for b in bindings]
    assert any("a label without its why" in problem for problem in unbacked(readme, bare))
    untyped = [dict(b, figures=["label: a number" if is_label(e) else e for e in b["figures"]])
               for b in bindings]
    assert any("neither file.json" in problem for problem in unbacked(readme, untyped))


def test_a_figure_added_to_a_block_or_a_block_left_out_fails(documents) -> None:
    doc, entries = documents["README.md prose"]
    block, _ = blocks(doc)[1]
    assert unbacked_blocks(doc.replace(block, block + " 0.5"), entries)
    assert unbacked_blocks(doc.replace(block, block + " twice"), entries)
    assert unbacked_blocks(doc, entries[:-1])
    doc, entries = documents["benchmarks/README.md"]
    bare = [{"block": entries[0]["block"], "unbound": " "}, *entries[1:]]
    assert any("unbound without its why" in problem for problem in unbacked_blocks(doc, bare))
    doc, entries = documents[FULLY_BOUND[0]]
    left = [{"block": entries[0]["block"], "unbound": "still being filed"}, *entries[1:]]
    assert unbacked_blocks(doc, left) == []
    assert any("bound in full" in problem for problem in unbacked_blocks(doc, left, unbound_ok=False))


@pytest.mark.parametrize(("token", "value", "ok"), [
    ("0.185", 0.18496, True), ("0.185", 0.1856, False), ("+0.139", 0.139, True), ("+0.139", -0.139, False),
    ("-3", -3.0, True), ("-3", 3.0, False), ("3", -3.0, False), ("1,640", 1640, True),
    ("3.0e-06", 3.04e-6, True), ("3.0e-06", 3.1e-6, False), ("0", 0.4, True), ("0", 1.0, False),
])
def test_a_figure_shows_its_value_at_the_precision_shown(token: str, value: float, ok: bool) -> None:
    assert shows(token, value) is ok
