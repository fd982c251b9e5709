"""The prompt format shared by the agents and SFT, and code extraction from model answers.

SFT trains on exactly what the Generator sends: ``generation_messages`` for the first attempt, then the
model's answer (``format_answer``), then ``revision_messages`` after a failed attempt.
"""

from __future__ import annotations

import ast
import re

from coding_framework.problems.problem import Problem

SYSTEM_PROMPT = "You are a Python programmer. Answer with one complete Python function in a ```python block."

# An opening fence (``` or ~~~, optional language tag) on its own line; the body runs to a matching
# closing fence or, when the answer was cut off, to the end of the text.
_FENCE_OPEN = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w+.-]*)[^\n]*$", re.MULTILINE)
_CODE_LANGS = {"", "python", "py", "python3", "py3", "pycon", "ipython"}
_CODE_START = re.compile(r"^(?:def |async def |class |import |from \S+ import |@)", re.MULTILINE)


def generation_messages(problem: Problem) -> list[dict[str, str]]:
    """System + user messages asking for the full ``problem.entry_point`` function in a python block."""
    if problem.prompt_is_code:
        body = f"Complete this function:\n```python\n{problem.prompt.strip()}\n```"
    else:
        body = f"{problem.prompt.strip()}\nName the function `{problem.entry_point}`."
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": body},
    ]


def revision_messages(problem: Problem, code: str, feedback: str) -> list[dict[str, str]]:
    """The user turn that follows a failed attempt ``code`` (already in the history as the assistant turn).

    ``code`` is not repeated (the model's answer is in the history); it is accepted so callers that
    rebuild a conversation from scratch and callers that append to one use the same signature.
    """
    del code
    text = (
        f"Your function `{problem.entry_point}` is wrong: {feedback.strip()}\n"
        "Fix it. Answer with the full corrected function in a ```python block."
    )
    return [{"role": "user", "content": text}]


def format_answer(code: str) -> str:
    """The assistant answer SFT trains on: the program in one python block and nothing else."""
    return f"```python\n{code.strip()}\n```"


def extract_code(text: str, entry_point: str | None = None) -> str | None:
    """The program in a model answer, or None when there is none.

    Fenced blocks win over bare text. Among several blocks, the last one that defines ``entry_point``
    is taken (answers often show a draft, then the fix, then a usage example); without an entry point,
    the last block that defines any function. A block whose closing fence is missing (generation cut
    off) runs to the end of the text, less a cut-off last statement. Without fences, the text from its
    first line of code on.
    """
    blocks = _fenced_blocks(text)
    if blocks:
        return _pick(blocks, entry_point)
    return _bare_code(text, entry_point)


def _fenced_blocks(text: str) -> list[str]:
    blocks: list[str] = []
    pos = 0
    while (m := _FENCE_OPEN.search(text, pos)) is not None:
        fence, lang = m.group("fence"), m.group("lang").lower()
        close = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.MULTILINE)
        end = close.search(text, m.end())
        body = text[m.end() + 1 : end.start()] if end else text[m.end() + 1 :]
        pos = end.end() if end else len(text)
        if lang in _CODE_LANGS and body.strip():
            block = _dedent_block(body)
            blocks.append(block if end else _trim_trailing_prose(block).rstrip() + "\n")
    return blocks


def _dedent_block(body: str) -> str:
    lines = body.rstrip().splitlines()
    indents = [len(ln) - len(ln.lstrip()) for ln in lines if ln.strip()]
    cut = min(indents, default=0)
    return "\n".join(ln[cut:] for ln in lines).strip("\n") + "\n"


def _defines(code: str, name: str | None) -> bool:
    if name is None:
        return re.search(r"^\s*(?:async\s+)?def\s+\w+\s*\(", code, re.MULTILINE) is not None
    return re.search(rf"^\s*(?:async\s+)?def\s+{re.escape(name)}\s*\(", code, re.MULTILINE) is not None


def _pick(blocks: list[str], entry_point: str | None) -> str:
    for wanted in (entry_point, None):
        defining = [b for b in blocks if _defines(b, wanted)]
        if defining:
            return defining[-1]
    return blocks[-1]


def _bare_code(text: str, entry_point: str | None) -> str | None:
    start = _CODE_START.search(text)
    if start is None:
        return None
    code = text[start.start() :]
    code = _trim_trailing_prose(code)
    if not _defines(code, entry_point) and not _defines(code, None):
        return None
    return code.rstrip() + "\n"


def _trim_trailing_prose(code: str) -> str:
    """Drop trailing lines until what is left parses (prose after the code, a cut-off last line)."""
    lines = code.rstrip().splitlines()
    for end in range(len(lines), 0, -1):
        candidate = "\n".join(lines[:end])
        if not lines[end - 1].strip():
            continue
        try:
            ast.parse(candidate)
        except SyntaxError:
            continue
        return candidate
    return code
