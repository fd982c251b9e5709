"""Operator and constant mutants of a reference program, for measuring how strong a problem's tests are.

Each mutant changes one AST site of the program with one operator (:data:`OPERATORS`):

- ``arith``: swaps an arithmetic or bitwise operator (``+`` and ``-``, ``*`` and ``/``, ``//`` and ``/``,
  ``%`` to ``//``, ``**`` to ``*``, ``&`` and ``|``, ``<<`` and ``>>``), in expressions and augmented
  assignments;
- ``compare``: moves a comparison's boundary or flips it (``<`` and ``<=``, ``>`` and ``>=``, ``==`` and
  ``!=``, ``in`` and ``not in``, ``is`` and ``is not``);
- ``boolean``: swaps ``and`` and ``or``, and drops a ``not``;
- ``constant``: an integer or float constant plus and minus one, ``True`` and ``False`` swapped;
- ``return``: ``return x`` becomes ``return None``.

Docstrings and annotations are left alone.

Mutants are deduplicated by their source text (so two sites that give the same program count once, and a
mutation that unparses to the original is dropped), must compile, and are capped per program set with a
seeded draw, so the same inputs always give the same mutants. Surviving mutants include equivalent ones
(programs no test could tell apart), so a kill rate is a lower bound on the tests' strength.
"""

from __future__ import annotations

import ast
import random
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

_ARITH: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Div,
    ast.Mod: ast.FloorDiv,
    ast.Pow: ast.Mult,
    ast.BitAnd: ast.BitOr,
    ast.BitOr: ast.BitAnd,
    ast.LShift: ast.RShift,
    ast.RShift: ast.LShift,
}
_COMPARE: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}


@dataclass(frozen=True)
class Mutant:
    """One mutated program: which ``operator`` changed what (``detail``, with its line), and the source."""

    operator: str
    detail: str
    program: str


# An edit returns what it changed (for ``Mutant.detail``) after changing the node in place.
Edit = Callable[[ast.AST], str]


def _arith_sites(node: ast.AST) -> Iterator[Edit]:
    if isinstance(node, ast.BinOp | ast.AugAssign) and type(node.op) in _ARITH:

        def swap(n: ast.AST) -> str:
            assert isinstance(n, ast.BinOp | ast.AugAssign)
            old = type(n.op)
            n.op = _ARITH[old]()
            return f"{old.__name__} -> {_ARITH[old].__name__}"

        yield swap


def _compare_sites(node: ast.AST) -> Iterator[Edit]:
    if not isinstance(node, ast.Compare):
        return
    for i, op in enumerate(node.ops):
        if type(op) in _COMPARE:

            def swap(n: ast.AST, i: int = i) -> str:
                assert isinstance(n, ast.Compare)
                old = type(n.ops[i])
                n.ops[i] = _COMPARE[old]()
                return f"{old.__name__} -> {_COMPARE[old].__name__}"

            yield swap


def _boolean_sites(node: ast.AST) -> Iterator[Edit]:
    if isinstance(node, ast.BoolOp):

        def swap(n: ast.AST) -> str:
            assert isinstance(n, ast.BoolOp)
            old = type(n.op)
            n.op = ast.Or() if old is ast.And else ast.And()
            return f"{old.__name__} -> {type(n.op).__name__}"

        yield swap
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):

        def drop(n: ast.AST) -> str:
            assert isinstance(n, ast.UnaryOp)
            n.op = ast.UAdd()  # replaced by its operand when the tree is rebuilt, see _DropUAddNot
            return "not x -> x"

        yield drop


def _constant_sites(node: ast.AST) -> Iterator[Edit]:
    if not isinstance(node, ast.Constant):
        return
    value = node.value
    if isinstance(value, bool):

        def flip(n: ast.AST) -> str:
            assert isinstance(n, ast.Constant)
            n.value = not n.value
            return f"{value} -> {n.value}"

        yield flip
    elif isinstance(value, int | float):
        for delta in (1, -1):

            def shift(n: ast.AST, delta: int = delta, number: int | float = value) -> str:
                assert isinstance(n, ast.Constant)
                n.value = number + delta
                return f"{number!r} -> {n.value!r}"

            yield shift


def _return_sites(node: ast.AST) -> Iterator[Edit]:
    if isinstance(node, ast.Return) and node.value is not None:
        if isinstance(node.value, ast.Constant) and node.value.value is None:
            return

        def none(n: ast.AST) -> str:
            assert isinstance(n, ast.Return)
            n.value = ast.Constant(None)
            return "return x -> return None"

        yield none


OPERATORS: dict[str, Callable[[ast.AST], Iterator[Edit]]] = {
    "arith": _arith_sites,
    "compare": _compare_sites,
    "boolean": _boolean_sites,
    "constant": _constant_sites,
    "return": _return_sites,
}


class _DropUAddNot(ast.NodeTransformer):
    """``+x`` made by dropping a ``not`` becomes ``x``: the boolean operator's mutation, finished."""

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, ast.UAdd) and getattr(node, "_dropped_not", False):
            return node.operand
        return node


def _skipped(tree: ast.AST) -> set[int]:
    """ids of the nodes never mutated: docstrings, and annotations (mutating them changes no behaviour)."""
    found = set()
    for node in ast.walk(tree):
        annotations = [getattr(node, "returns", None), getattr(node, "annotation", None)]
        found |= {id(sub) for ann in annotations if ann is not None for sub in ast.walk(ann)}
        body = getattr(node, "body", None)
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and body:
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _parse(program: str) -> ast.Module | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", (SyntaxWarning, DeprecationWarning))
            return ast.parse(program)
    except (SyntaxError, ValueError):
        return None


def _sites(tree: ast.Module) -> list[tuple[int, str, Edit]]:
    """(position in walk order, operator name, edit) for every mutable site of ``tree``."""
    skip = _skipped(tree)
    nodes = [n for n in ast.walk(tree) if id(n) not in skip]
    return [
        (index, name, edit)
        for index, node in enumerate(nodes)
        for name, sites in OPERATORS.items()
        for edit in sites(node)
    ]


def _apply(program: str, index: int, edit: Edit) -> tuple[str, str] | None:
    """The program with ``edit`` applied to the ``index``-th node (fresh parse), and the edit's detail."""
    tree = _parse(program)
    assert tree is not None
    skip = _skipped(tree)
    node = [n for n in ast.walk(tree) if id(n) not in skip][index]
    detail = edit(node)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd):
        node._dropped_not = True  # type: ignore[attr-defined]
        tree = _DropUAddNot().visit(tree)
    line = getattr(node, "lineno", 0)
    try:
        source = ast.unparse(ast.fix_missing_locations(tree))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", (SyntaxWarning, DeprecationWarning))
            compile(source, "<mutant>", "exec")
    except (SyntaxError, ValueError, RecursionError):
        return None
    return source, f"line {line}: {detail}"


def mutants(programs: Sequence[str], cap: int | None = None, seed: int | str = 0) -> list[Mutant]:
    """Distinct compiling single-site mutants of ``programs`` (a problem's references), at most ``cap``.

    Programs that do not parse give none. With more than ``cap`` candidates, a draw seeded by ``seed``
    picks which; they keep their site order.
    """
    originals: set[str] = set()
    found: dict[str, Mutant] = {}
    for program in programs:
        tree = _parse(program)
        if tree is None:
            continue
        originals.add(ast.unparse(tree))
        for index, name, edit in _sites(tree):
            made = _apply(program, index, edit)
            if made is not None and made[0] not in found:
                found[made[0]] = Mutant(name, made[1], made[0])
    candidates = [m for text, m in found.items() if text not in originals]
    if cap is not None and len(candidates) > cap:
        keep = sorted(random.Random(f"mutants:{seed}").sample(range(len(candidates)), cap))
        candidates = [candidates[i] for i in keep]
    return candidates
