"""Secrets in training data: credentials and keys found by ``detect-secrets`` (Yelp's maintained scanner).

Every line of a problem's prompt, description, tests, prelude and reference solutions is scanned with the
scanner's pattern and keyword plugins (AWS, GitHub, OpenAI, Slack, Stripe, private keys, JWTs,
``password = "..."``-style assignments, ...). Its high-entropy plugins are left out: on code they flag
ordinary identifiers and test strings (thousands of hits on MBPP alone), which would drop clean problems.
"""

from __future__ import annotations

from functools import cache

from coding_framework.problems.problem import Problem

__all__ = ["find_secrets"]


@cache
def _plugins() -> tuple[str, ...]:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    classes: list[type] = list(get_mapping_from_secret_type_to_class().values())
    names = [c.__name__ for c in classes]
    return tuple(sorted(n for n in names if "Entropy" not in n))


def find_secrets(problems: list[Problem]) -> dict[str, list[str]]:
    """task_id -> the kinds of secret found in it (sorted, distinct), for the problems that hold any."""
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import transient_settings

    found: dict[str, list[str]] = {}
    with transient_settings({"plugins_used": [{"name": name} for name in _plugins()]}):
        for problem in problems:
            text = "\n".join([problem.prompt, problem.description, problem.test_code, problem.prelude,
                              *problem.solutions])
            kinds = {secret.type for line in text.splitlines() for secret in scan_line(line)}
            if kinds:
                found[problem.task_id] = sorted(kinds)
    return found
