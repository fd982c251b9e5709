"""Bug injection: small AST-located edits to one function of a module, the rest of its text kept exactly.

Each mutation edits only the source span of the node it changes (found by the node's line and column
offsets), or deletes whole lines of a branch, so comments and formatting elsewhere survive and the gold
patch is a small diff. Every mutation's source parses and differs from the original's AST.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

MUTATION_KINDS = (
    "operator_swap",
    "comparison_swap",
    "off_by_one",
    "dropped_branch",
    "wrong_default",
    "swapped_argument",
)

_OPERATORS: dict[type[ast.operator], tuple[str, str]] = {
    ast.Add: ("+", "-"),
    ast.Sub: ("-", "+"),
    ast.Mult: ("*", "/"),
    ast.Div: ("/", "*"),
    ast.FloorDiv: ("//", "/"),
    ast.Mod: ("%", "//"),
}
_COMPARISONS: dict[type[ast.cmpop], tuple[str, str]] = {
    ast.Lt: ("<", "<="),
    ast.LtE: ("<=", "<"),
    ast.Gt: (">", ">="),
    ast.GtE: (">=", ">"),
    ast.Eq: ("==", "!="),
    ast.NotEq: ("!=", "=="),
}
# A default string's plausible wrong value: another separator, or the other letter case.
_STRING_SWAPS = {
    ",": ";",
    ";": ",",
    " ": ",",
    "-": "_",
    "_": "-",
    "/": "-",
    ".": ",",
    ":": ";",
    "": " ",
    "\n": " ",
    "\t": " ",
    "|": ",",
}


class MutationError(ValueError):
    """The function to mutate is not a top-level function of the source."""


@dataclass(frozen=True)
class Mutation:
    """One injected bug: the whole module's new source, and where and what was changed."""

    kind: str
    function: str
    line: int
    description: str
    new_source: str


@dataclass(frozen=True)
class _Edit:
    kind: str
    line: int
    description: str
    start: int  # byte offsets into the UTF-8 source
    end: int
    text: str


class _Source:
    """The module's text as UTF-8 bytes, with byte offsets for AST positions (col offsets are bytes)."""

    def __init__(self, source: str):
        self.data = source.encode("utf-8")
        self.lines = self.data.splitlines(keepends=True)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))

    def offset(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col

    def span(self, node: ast.AST) -> tuple[int, int]:
        start = self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end = self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        return start, end

    def text(self, start: int, end: int) -> str:
        return self.data[start:end].decode("utf-8")

    def line_text(self, line: int) -> str:
        return self.lines[line - 1].decode("utf-8") if 0 < line <= len(self.lines) else ""

    def apply(self, edit: _Edit) -> str:
        return (self.data[: edit.start] + edit.text.encode("utf-8") + self.data[edit.end :]).decode("utf-8")


def enumerate_mutations(source: str, function: str, package_functions: Iterable[str] = ()) -> list[Mutation]:
    """Every mutation of the top-level function ``function`` in ``source``, by kind (MUTATION_KINDS order)
    and then by position. ``package_functions`` names the package's functions a swapped-argument bug may
    target, besides those the module defines itself."""
    tree = ast.parse(source)
    target = next(
        (
            n
            for n in tree.body
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == function
        ),
        None,
    )
    if target is None:
        raise MutationError(f"no top-level function {function!r} in the source")
    src = _Source(source)
    callees = set(package_functions) | {
        n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    callees.discard(function)
    edits = [
        *_operator_swaps(target, src),
        *_comparison_swaps(target, src),
        *_off_by_ones(target, src),
        *_dropped_branches(target, src),
        *_wrong_defaults(target, src),
        *_swapped_arguments(target, src, callees),
    ]
    original = ast.dump(tree)
    seen: set[str] = set()
    out: list[Mutation] = []
    for edit in edits:
        new_source = src.apply(edit)
        if new_source in seen:
            continue
        try:
            changed = ast.dump(ast.parse(new_source)) != original
        except SyntaxError:
            continue
        if changed:
            seen.add(new_source)
            out.append(Mutation(edit.kind, function, edit.line, edit.description, new_source))
    return out


def _body_nodes(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.AST]:
    """The nodes of the function's body (not its signature or decorators), in source order."""
    nodes = [node for stmt in function.body for node in ast.walk(stmt)]
    return iter(sorted(nodes, key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0))))


def _operator_edit(
    src: _Source, kind: str, left: ast.AST, right: ast.AST, old: str, new: str, what: str
) -> _Edit | None:
    """Replace the operator token ``old`` that stands between ``left`` and ``right``."""
    gap_start, gap_end = src.span(left)[1], src.span(right)[0]
    gap = src.text(gap_start, gap_end)
    if "#" in gap or old not in gap:
        return None
    at = gap_start + len(gap[: gap.index(old)].encode("utf-8"))
    line = right.lineno  # type: ignore[attr-defined]
    return _Edit(kind, line, f"{what} `{old}` changed to `{new}` (line {line})", at, at + len(old), new)


def _is_text(node: ast.expr) -> bool:
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))


def _operator_swaps(function: ast.FunctionDef | ast.AsyncFunctionDef, src: _Source) -> Iterator[_Edit]:
    for node in _body_nodes(function):
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            # `"a" - b` is a TypeError anyone sees at once; string formatting with `%` is not arithmetic.
            if _is_text(node.left) or _is_text(node.right):
                continue
            old, new = _OPERATORS[type(node.op)]
            edit = _operator_edit(src, "operator_swap", node.left, node.right, old, new, "operator")
        elif isinstance(node, ast.AugAssign) and type(node.op) in _OPERATORS:
            if _is_text(node.value):
                continue
            old, new = _OPERATORS[type(node.op)]
            edit = _operator_edit(
                src, "operator_swap", node.target, node.value, old + "=", new + "=", "augmented assignment"
            )
        else:
            continue
        if edit is not None:
            yield edit


def _comparison_swaps(function: ast.FunctionDef | ast.AsyncFunctionDef, src: _Source) -> Iterator[_Edit]:
    for node in _body_nodes(function):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        for i, op in enumerate(node.ops):
            if type(op) not in _COMPARISONS:
                continue
            old, new = _COMPARISONS[type(op)]
            edit = _operator_edit(
                src, "comparison_swap", operands[i], operands[i + 1], old, new, "comparison"
            )
            if edit is not None:
                yield edit


def _parents(function: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: parent for parent in ast.walk(function) for child in ast.iter_child_nodes(parent)}


def _counts_as_index(constant: ast.Constant, parents: dict[ast.AST, ast.AST]) -> str | None:
    """Where an int constant sits, if it is a bound, index, slice, range or arithmetic operand."""
    node: ast.AST = constant
    parent = parents.get(node)
    if isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.USub):
        node, parent = parent, parents.get(parent)
    if isinstance(parent, ast.Compare):
        return "comparison"
    if isinstance(parent, ast.BinOp):
        return "arithmetic"
    if isinstance(parent, ast.AugAssign) and parent.value is node:
        return "arithmetic"
    if isinstance(parent, ast.Slice):
        return "slice"
    if isinstance(parent, ast.Subscript) and parent.slice is node:
        return "index"
    if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id == "range":
        return "range()" if node in parent.args else None
    return None


def _off_by_ones(function: ast.FunctionDef | ast.AsyncFunctionDef, src: _Source) -> Iterator[_Edit]:
    parents = _parents(function)
    for node in _body_nodes(function):
        if not (isinstance(node, ast.Constant) and type(node.value) is int):
            continue
        where = _counts_as_index(node, parents)
        if where is None:
            continue
        start, end = src.span(node)
        for new in (node.value + 1, node.value - 1):
            if new < 0:
                continue
            yield _Edit(
                "off_by_one",
                node.lineno,
                f"{where} constant {node.value} changed to {new} (line {node.lineno})",
                start,
                end,
                str(new),
            )


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _delete_lines(src: _Source, first: int, last: int) -> tuple[int, int]:
    return src.starts[first - 1], src.starts[last]


def _ends_line(src: _Source, node: ast.AST) -> bool:
    """Nothing but a comment follows ``node`` on its last line."""
    line = src.lines[node.end_lineno - 1].decode("utf-8")  # type: ignore[attr-defined]
    rest = src.text(src.span(node)[1], src.starts[node.end_lineno]).strip()  # type: ignore[attr-defined]
    return bool(line) and (not rest or rest.startswith("#"))


def _header_line(src: _Source, after: int, before: int, keyword: str) -> int | None:
    """The line in (after, before] whose text starts with ``keyword`` (an ``else``/``elif`` header)."""
    for line in range(after + 1, before + 1):
        if src.line_text(line).lstrip().startswith(keyword):
            return line
    return None


def _dropped_branches(function: ast.FunctionDef | ast.AsyncFunctionDef, src: _Source) -> Iterator[_Edit]:
    parents = _parents(function)
    for node in _body_nodes(function):
        if not isinstance(node, ast.If):
            continue
        if node.orelse and _ends_line(src, node.body[-1]) and _ends_line(src, node.orelse[-1]):
            edit = _drop_else(node, src)
            if edit is not None:
                yield edit
        elif not node.orelse and not _is_elif(node, src) and _ends_line(src, node):
            yield _drop_if(node, parents[node], src)


def _is_elif(node: ast.If, src: _Source) -> bool:
    return src.line_text(node.lineno).lstrip().startswith("elif")


def _drop_else(node: ast.If, src: _Source) -> _Edit | None:
    """Remove the ``elif`` branch right after ``node``'s body (keeping what follows it), or its ``else``."""
    body_end = node.body[-1].end_lineno or node.body[-1].lineno
    first = node.orelse[0]
    if len(node.orelse) == 1 and isinstance(first, ast.If) and _is_elif(first, src):
        last = (first.body[-1].end_lineno or first.body[-1].lineno) if first.orelse else first.end_lineno
        if last is None:
            return None
        if first.orelse:
            following = _header_line(src, last, first.orelse[0].lineno, "el")
            if following is None:
                return None
            last = following - 1
        start, end = _delete_lines(src, first.lineno, last)
        return _Edit(
            "dropped_branch", first.lineno, f"`elif` branch removed (line {first.lineno})", start, end, ""
        )
    header = _header_line(src, body_end, first.lineno, "else")
    if header is None:
        return None
    start, end = _delete_lines(src, header, node.orelse[-1].end_lineno or header)
    return _Edit("dropped_branch", header, f"`else` branch removed (line {header})", start, end, "")


def _drop_if(node: ast.If, parent: ast.AST, src: _Source) -> _Edit:
    """Remove an ``if`` without ``else``; a block it alone made up becomes ``pass``."""
    block = next(
        (getattr(parent, f) for f in ("body", "orelse", "finalbody") if node in getattr(parent, f, [])),
        [node],
    )
    start, end = _delete_lines(src, node.lineno, node.end_lineno or node.lineno)
    text = "" if len(block) > 1 else _indent(src.line_text(node.lineno)) + "pass\n"
    return _Edit("dropped_branch", node.lineno, f"`if` block removed (line {node.lineno})", start, end, text)


def _string_swap(value: str) -> str | None:
    if value in _STRING_SWAPS:
        return _STRING_SWAPS[value]
    for old, new in _STRING_SWAPS.items():
        if old and old in value:
            return value.replace(old, new)
    swapped = value.lower() if value != value.lower() else value.upper()
    return swapped if swapped != value else None


def _wrong_defaults(function: ast.FunctionDef | ast.AsyncFunctionDef, src: _Source) -> Iterator[_Edit]:
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    named = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True))
    named += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
    for arg, default in named:
        if not isinstance(default, ast.Constant):
            continue
        value = default.value
        old_text = src.text(*src.span(default))
        if isinstance(value, bool):
            new_text = repr(not value)
        elif isinstance(value, int):
            new_text = str(value + 1)
        elif isinstance(value, str):
            new = _string_swap(value)
            if new is None:
                continue
            new_text = repr(new)
            if old_text.startswith('"') and "'" not in new and '"' not in new:
                new_text = '"' + new_text[1:-1] + '"'
        else:
            continue
        start, end = src.span(default)
        yield _Edit(
            "wrong_default",
            default.lineno,
            f"default of `{arg.arg}` changed from {old_text} to {new_text} (line {default.lineno})",
            start,
            end,
            new_text,
        )


def _swapped_arguments(
    function: ast.FunctionDef | ast.AsyncFunctionDef, src: _Source, callees: set[str]
) -> Iterator[_Edit]:
    for node in _body_nodes(function):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in callees):
            continue
        if len(node.args) < 2 or any(isinstance(a, ast.Starred) for a in node.args[:2]):
            continue
        first, second = node.args[0], node.args[1]
        (a_start, a_end), (b_start, b_end) = src.span(first), src.span(second)
        a_text, b_text = src.text(a_start, a_end), src.text(b_start, b_end)
        if a_text == b_text:
            continue
        between = src.text(a_end, b_start)
        yield _Edit(
            "swapped_argument",
            node.lineno,
            f"first two arguments of `{node.func.id}(...)` swapped (line {node.lineno})",
            a_start,
            b_end,
            b_text + between + a_text,
        )


__all__ = ["MUTATION_KINDS", "Mutation", "MutationError", "enumerate_mutations"]
