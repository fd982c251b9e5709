"""Style from a real linter: ruff findings per program, mapped linearly onto [-1, 1]."""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from coding_framework.grading import ExecutionResult
from coding_framework.rewards.base import BaseRewardFunction, Item, RewardOutput, clip, register_reward

# pycodestyle errors/warnings, pyflakes, bugbear, simplifications and naming: what a reviewer would flag.
RUFF_RULES = "E,W,F,B,SIM,N,UP,C4"


def ruff_binary() -> str:
    from ruff.__main__ import find_ruff_bin

    return str(find_ruff_bin())


def lint(programs: Sequence[str], rules: str = RUFF_RULES, ignore: str = "") -> list[list[dict]]:
    """ruff findings (``rules`` selected, ``ignore`` not) for each program, in one ruff process for the
    whole batch."""
    with tempfile.TemporaryDirectory(prefix="cf-style-") as tmp:
        paths = []
        for i, program in enumerate(programs):
            path = Path(tmp) / f"p{i}.py"
            path.write_text(program)
            paths.append(path)
        proc = subprocess.run(
            [
                ruff_binary(),
                "check",
                "--isolated",
                "--no-cache",
                "--select",
                rules,
                *(["--ignore", ignore] if ignore else []),
                "--output-format",
                "json",
                "--exit-zero",
                *map(str, paths),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"ruff failed: {proc.stderr.strip()}")
        findings: dict[str, list[dict]] = {str(p): [] for p in paths}
        for item in json.loads(proc.stdout or "[]"):
            findings.setdefault(item["filename"], []).append(item)
        return [findings[str(p)] for p in paths]


@register_reward("style")
class StyleReward(BaseRewardFunction):
    """1.0 for no findings, falling linearly to -1.0 at ``style_max_issues``; a syntax error scores -1."""

    needs_execution = False

    def score_batch(
        self, items: Sequence[Item], results: Sequence[ExecutionResult] | None = None
    ) -> list[RewardOutput]:
        outs = []
        for findings in lint([program for _, program in items]):
            codes = Counter(f.get("code") or "invalid-syntax" for f in findings)
            syntax_error = bool({"invalid-syntax", "E999"} & codes.keys())
            n = len(findings)
            value = (
                -1.0
                if syntax_error
                else 1.0 - 2.0 * min(n, self.config.style_max_issues) / self.config.style_max_issues
            )
            outs.append(
                RewardOutput(
                    value=clip(value, self.config.clip),
                    raw=float(n),
                    details={"codes": dict(codes), "syntax_error": syntax_error},
                )
            )
        return outs
