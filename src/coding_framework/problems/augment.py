"""Augmented copies of code-prompt problems (built-in, synthetic): renamed identifiers, reworded prompts and
resampled docstring examples, deterministic per seed.

- **rename**: the entry point and its parameters get fresh names, consistently in the prompt (code and
  docstring), every reference, the tests, the prelude and the description. Names are swapped token by
  token, so formatting and comments stay; the result is checked against an AST rename of the original,
  and where the two disagree (a parameter name also used as another function's keyword, a name inside an
  f-string) only the entry point is renamed, or nothing.
- **reword**: the docstring's prose goes through one of a few fixed paraphrase templates.
- **shuffle**: the docstring's examples are redrawn, in a random order, from the examples shown and the
  doctest forms of the tests (``assert f(x) == y``).

An augmented copy records its origin in ``lineage`` (the original's task_id, also for copies of copies).
:func:`augment_split` puts copies of held-out problems on the held-out side only, and
:func:`check_no_leak` refuses a training set that holds a held-out problem, a copy of one, or a synthetic
instance with a held-out family constant.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import io
import keyword
import random
import re
import tokenize
from collections.abc import Callable, Sequence

from coding_framework.problems.builtin import _doctest
from coding_framework.problems.problem import Problem

KINDS = ("rename", "reword", "shuffle")
_VERBS = ("compute", "find", "get", "make", "calc", "derive", "build", "produce", "solve", "evaluate")
_NOUNS = ("result", "answer", "value", "output", "outcome", "target", "quantity", "thing")
_PARAMS = (
    "data", "values", "seq", "arg", "inp", "val", "xs", "entry", "text_in", "num", "count", "limit", "source",
    "entries", "elems", "amount", "first", "second", "other", "obj",
)  # fmt: skip
# Parameters named like English words are left alone: their prose mentions cannot be told from the words.
_PROSE_WORDS = {
    "a",
    "i",
    "an",
    "as",
    "is",
    "it",
    "in",
    "of",
    "or",
    "to",
    "the",
    "and",
    "at",
    "be",
    "by",
    "on",
}
_REWORDINGS = (
    "{prose}",
    "Task: {prose}",
    "{prose}\n\nImplement the body of this function.",
    "Complete this function. {prose}",
)
_LEAD_VERBS = {"Return ": ("Return ", "Compute and return ", "Give back ")}
# Rewrites a docstring: (prose, examples) -> (prose, examples).
EditDoc = Callable[[str, list[str]], tuple[str, list[str]]]


def root_task_id(problem: Problem) -> str:
    """The task_id of the original problem that ``problem`` was derived from (its own when original)."""
    return problem.lineage or problem.task_id


def augment(problem: Problem, seed: int, kinds: Sequence[str] = KINDS) -> Problem:
    """A copy of ``problem`` transformed by ``kinds`` (in :data:`KINDS` order), the same for the same seed."""
    if not problem.prompt_is_code:
        raise ValueError(f"{problem.task_id}: only problems whose prompt is code can be augmented")
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        raise ValueError(f"unknown augmentation(s) {unknown}; choose from {', '.join(KINDS)}")
    rng = random.Random(f"augment:{seed}:{problem.task_id}")
    out = problem
    for kind in KINDS:
        if kind in kinds:
            out = {"rename": rename_identifiers, "reword": reword_prompt, "shuffle": shuffle_examples}[kind](
                out, rng
            )
    return out.model_copy(
        update={"task_id": f"{problem.task_id}@aug{seed}", "lineage": root_task_id(problem)}
    )


def augment_split(
    train: Sequence[Problem], heldout: Sequence[Problem], seed: int, copies: int = 1
) -> tuple[list[Problem], list[Problem]]:
    """Both sides plus ``copies`` augmented copies of each of their problems, each on its original's side."""
    grow = [augment(p, seed + c) for c in range(copies) for p in train]
    held = [augment(p, seed + c) for c in range(copies) for p in heldout]
    out_train, out_heldout = [*train, *grow], [*heldout, *held]
    check_no_leak(out_train, out_heldout)
    return out_train, out_heldout


def check_no_leak(train: Sequence[Problem], heldout: Sequence[Problem]) -> None:
    """Raise ``ValueError`` when a training problem is, or derives from, a held-out one, or shares a
    synthetic family's held-out constant (its ``const:`` tag)."""
    held_roots = {root_task_id(p) for p in heldout}
    held_consts = {(p.source, t) for p in heldout if p.source.startswith("synthetic:") for t in p.tags}
    leaked = [
        p.task_id
        for p in train
        if root_task_id(p) in held_roots
        or any((p.source, t) in held_consts for t in p.tags if t.startswith("const:"))
    ]
    if leaked:
        raise ValueError(f"held-out problems leak into training: {', '.join(sorted(leaked)[:5])}")


def rename_identifiers(problem: Problem, rng: random.Random) -> Problem:
    """``problem`` with fresh names for its entry point and parameters (see the module docstring)."""
    func = _entry_function(problem.prompt, problem.entry_point)
    taken = _all_names(problem) | set(dir(builtins)) | set(keyword.kwlist)
    mapping = {problem.entry_point: _fresh_entry(rng, taken)}
    taken.add(mapping[problem.entry_point])
    params = [a.arg for a in func.args.posonlyargs + func.args.args + func.args.kwonlyargs] if func else []
    for name in params:
        if name not in _PROSE_WORDS and not hasattr(builtins, name) and name not in mapping:
            mapping[name] = _fresh_param(rng, taken)
            taken.add(mapping[name])
    for attempt in (mapping, {problem.entry_point: mapping[problem.entry_point]}):
        renamed = _renamed(problem, attempt)
        if renamed is not None:
            return renamed
    return problem


def reword_prompt(problem: Problem, rng: random.Random) -> Problem:
    """``problem`` whose docstring prose (and description) went through a seeded paraphrase template."""
    template = rng.choice(_REWORDINGS)
    verbs = {lead: rng.choice(options) for lead, options in _LEAD_VERBS.items()}

    def reword(prose: str) -> str:
        for lead, verb in verbs.items():
            if prose.startswith(lead):
                prose = verb + prose[len(lead) :]
        return template.format(prose=prose)

    def edit(prose: str, examples: list[str]) -> tuple[str, list[str]]:
        return reword(prose), examples

    out = _edit_docstring(problem, edit)
    return out.model_copy(update={"description": reword(problem.description)}) if problem.description else out


def shuffle_examples(problem: Problem, rng: random.Random) -> Problem:
    """``problem`` whose docstring shows as many examples as before, redrawn and reordered by ``rng``."""
    tests = problem.test_code.splitlines() if problem.test_format == "asserts" else []

    def edit(prose: str, examples: list[str]) -> tuple[str, list[str]]:
        pool = list(dict.fromkeys([*examples, *filter(None, map(_safe_doctest, tests))]))
        return prose, rng.sample(pool, len(examples)) if examples else examples

    return _edit_docstring(problem, edit)


def _safe_doctest(line: str) -> str | None:
    try:
        return _doctest(line) if line.strip() else None
    except (SyntaxError, IndexError):
        return None


def _entry_function(prompt: str, name: str) -> ast.FunctionDef | None:
    try:
        tree = ast.parse(prompt)
    except SyntaxError:
        return None
    found = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
    return found[-1] if found else None


def _all_names(problem: Problem) -> set[str]:
    names: set[str] = set()
    for text in (problem.prompt, problem.test_code, problem.prelude, *problem.solutions):
        try:
            names |= {t.string for t in _tokens(text) if t.type == tokenize.NAME}
        except (tokenize.TokenError, SyntaxError):
            continue
    return names


def _fresh_entry(rng: random.Random, taken: set[str]) -> str:
    name = f"{rng.choice(_VERBS)}_{rng.choice(_NOUNS)}"
    return _unique(name, taken)


def _fresh_param(rng: random.Random, taken: set[str]) -> str:
    return _unique(rng.choice(_PARAMS), taken)


def _unique(name: str, taken: set[str]) -> str:
    suffix = 2
    candidate = name
    while candidate in taken:
        candidate, suffix = f"{name}{suffix}", suffix + 1
    return candidate


def _tokens(text: str) -> list[tokenize.TokenInfo]:
    return list(tokenize.generate_tokens(io.StringIO(text).readline))


def _renamed(problem: Problem, mapping: dict[str, str]) -> Problem | None:
    """``problem`` renamed by ``mapping``, or None when a token rename differs from the AST rename."""
    texts = {}
    for key, text in (
        ("prompt", problem.prompt),
        ("test_code", problem.test_code),
        ("prelude", problem.prelude),
    ):
        texts[key] = _rename_checked(text, mapping)
    solutions = [_rename_checked(s, mapping) for s in problem.solutions]
    if any(v is None for v in texts.values()) or any(s is None for s in solutions):
        return None
    return problem.model_copy(
        update={
            **texts,
            "solutions": solutions,
            "entry_point": mapping[problem.entry_point],
            "description": _rename_prose(problem.description, mapping),
        }
    )


def _rename_checked(text: str, mapping: dict[str, str]) -> str | None:
    if not text.strip():
        return text
    try:
        new = _rename_tokens(text, mapping)
        expected = _AstRenamer(mapping).visit(ast.parse(text))
        same = _dump(ast.parse(new)) == _dump(expected)
    except (SyntaxError, tokenize.TokenError):
        return None
    return new if same else None


def _rename_tokens(text: str, mapping: dict[str, str]) -> str:
    """``text`` with every NAME token in ``mapping`` swapped (not attributes), and names in docstrings."""
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    docstrings = _docstring_positions(text)
    edits: list[tuple[int, int, str]] = []
    previous = None
    for tok in _tokens(text):
        begin, end = starts[tok.start[0] - 1] + tok.start[1], starts[tok.end[0] - 1] + tok.end[1]
        if tok.type == tokenize.NAME and tok.string in mapping and previous != ".":
            edits.append((begin, end, mapping[tok.string]))
        elif tok.type == tokenize.STRING and tok.start in docstrings:
            edits.append((begin, end, _rename_prose(tok.string, mapping)))
        if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT):
            previous = tok.string
    for begin, end, new in reversed(edits):
        text = text[:begin] + new + text[end:]
    return text


def _rename_prose(text: str, mapping: dict[str, str]) -> str:
    words = [re.escape(n) for n in mapping if n not in _PROSE_WORDS]
    if not words:
        return text
    return re.sub(rf"\b({'|'.join(words)})\b", lambda m: mapping[m.group(1)], text)


def _docstring_nodes(tree: ast.AST) -> list[ast.Constant]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                found.append(first.value)
    return found


def _docstring_positions(text: str) -> set[tuple[int, int]]:
    return {(n.lineno, n.col_offset) for n in _docstring_nodes(ast.parse(text))}


def _dump(tree: ast.AST) -> str:
    """The AST without docstring contents (docstrings are renamed as prose, not as code)."""
    for node in _docstring_nodes(tree):
        node.value = ""
    return ast.dump(tree)


class _AstRenamer(ast.NodeTransformer):
    """The reference rename: names, parameters, the function's name, and keywords of calls to it."""

    def __init__(self, mapping: dict[str, str]) -> None:
        self.mapping = mapping
        self.functions = set(mapping.values())

    def visit_Name(self, node: ast.Name) -> ast.Name:
        node.id = self.mapping.get(node.id, node.id)
        return node

    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.arg = self.mapping.get(node.arg, node.arg)
        self.generic_visit(node)
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        node.name = self.mapping.get(node.name, node.name)
        self.generic_visit(node)
        return node

    def visit_Call(self, node: ast.Call) -> ast.Call:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in self.functions:
            for kw in node.keywords:
                if kw.arg is not None:
                    kw.arg = self.mapping.get(kw.arg, kw.arg)
        return node


def _edit_docstring(problem: Problem, edit: EditDoc) -> Problem:
    """Rewrite the entry point's docstring in the prompt (and in references that start with the prompt)."""
    func = _entry_function(problem.prompt, problem.entry_point)
    first = func.body[0] if func is not None else None
    if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)):
        return problem
    node = first.value
    if not isinstance(node.value, str) or node.end_lineno is None or node.end_col_offset is None:
        return problem
    prose, examples = _split_doc(inspect.cleandoc(node.value))
    prose, examples = edit(prose, examples)
    body = "\n\n".join(filter(None, [prose, "\n".join(examples)]))
    indent = " " * node.col_offset
    literal = '"""' + "\n".join(indent + line if line else "" for line in body.splitlines()).lstrip()
    literal += f'\n{indent}"""'
    if '"""' in body or "\\" in body:
        return problem
    starts = [0]
    for line in problem.prompt.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    begin = starts[node.lineno - 1] + node.col_offset
    end = starts[node.end_lineno - 1] + node.end_col_offset
    prompt = problem.prompt[:begin] + literal + problem.prompt[end:]
    solutions = [
        prompt + s[len(problem.prompt) :] if s.startswith(problem.prompt) else s for s in problem.solutions
    ]
    return problem.model_copy(update={"prompt": prompt, "solutions": solutions})


def _split_doc(doc: str) -> tuple[str, list[str]]:
    """The docstring's prose and its examples (each a ``>>>`` line with its expected-output lines)."""
    lines = doc.splitlines()
    first = next((i for i, line in enumerate(lines) if line.lstrip().startswith(">>>")), len(lines))
    examples: list[str] = []
    for line in lines[first:]:
        if line.lstrip().startswith(">>>"):
            examples.append(line.strip())
        elif line.strip() and examples:
            examples[-1] += "\n" + line.strip()
    return "\n".join(lines[:first]).strip(), examples
