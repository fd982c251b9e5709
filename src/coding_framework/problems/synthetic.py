"""Synthetic problem families: many small instances of one parametrised task, with a held-out split.

Each family in :data:`FAMILIES` (e.g. ``add_constant``: "add k to every element") has a *primary constant*
with a finite domain (``Family.domain``) plus secondary details drawn at random (function and argument
names, test inputs, sometimes a second constant). The prompt is HumanEval style and its docstring states
every constant, so a small model can solve an instance by copying constants from the prompt.

Held-out split (:func:`synthetic_split`): per family, the primary-constant domain is shuffled with the
seed and its first ``ceil(heldout_fraction * len(domain))`` values are reserved. Held-out instances use
only reserved values and training instances only the others, so no held-out primary constant ever
appears in training. Each problem records its primary constant in a ``const:<repr>`` tag.
"""

from __future__ import annotations

import hashlib
import math
import random
import textwrap
from collections.abc import Sequence
from typing import Any

from coding_framework.problems._families import FAMILIES, Family, Instance, get_family, register_family
from coding_framework.problems.builtin import humaneval_prompt
from coding_framework.problems.problem import Problem

__all__ = [
    "FAMILIES",
    "Family",
    "generate_instances",
    "get_family",
    "register_family",
    "reserved_split",
    "synthetic_split",
]


def generate_instances(
    family: str, n: int, seed: int = 0, values: Sequence[Any] | None = None
) -> list[Problem]:
    """``n`` distinct instances of ``family``, reproducible from ``seed``.

    The primary constant is drawn from ``values`` (default: the family's whole domain). Instances differ
    in their prompts; a :class:`ValueError` says so when ``values`` cannot yield ``n`` distinct ones.
    """
    fam = get_family(family)
    pool = list(fam.domain if values is None else values)
    if not pool:
        raise ValueError(f"family {family!r}: no constant values to draw from")
    rng = random.Random(f"{seed}:{family}")
    order = rng.sample(pool, len(pool))
    problems: dict[str, Problem] = {}
    # Cycle through the shuffled values so each is used about equally; a repeat differs in its details.
    for attempt in range(50 * n + 100):
        if len(problems) == n:
            break
        value = order[attempt % len(order)]
        problem = _to_problem(fam, value, fam.build(rng, value))
        problems.setdefault(problem.task_id, problem)
    if len(problems) < n:
        raise ValueError(f"family {family!r}: cannot make {n} distinct instances from {len(pool)} values")
    return list(problems.values())


def synthetic_split(
    n_per_family: int = 20,
    heldout_fraction: float = 0.25,
    seed: int = 0,
    instance_seed: int | None = None,
) -> tuple[list[Problem], list[Problem]]:
    """``(train, heldout)`` over every family: ``n_per_family`` instances each, about ``heldout_fraction``
    of them held out, with primary constants disjoint from training (see the module docstring).

    ``seed`` fixes which constants are held out; ``instance_seed`` (default ``seed``) draws the instances'
    details, so another value gives fresh instances over the same constants.
    """
    n_heldout = _n_heldout(n_per_family, heldout_fraction)
    train: list[Problem] = []
    heldout: list[Problem] = []
    details = seed if instance_seed is None else instance_seed
    for name, values in _shuffled_domains(seed):
        cut = _cut(heldout_fraction, len(values))
        heldout += generate_instances(name, n_heldout, details, values[:cut])
        train += generate_instances(name, n_per_family - n_heldout, details, values[cut:])
    return train, heldout


def reserved_split(
    n_per_family: int = 20,
    heldout_fraction: float = 0.25,
    seed: int = 0,
    train_share: float = 0.5,
    instance_seed: int | None = None,
) -> tuple[list[Problem], list[Problem]]:
    """``(train, heldout)`` drawn only from the constants ``synthetic_split(..., seed)`` holds out.

    Per family, the first ``train_share`` of those reserved values make the training instances and the
    rest the held-out ones, in the same numbers as ``synthetic_split``. A model fine-tuned on
    ``synthetic_split``'s training side has seen neither; training on this split rewards reading the
    constants from the prompt, since none can be recalled, and the held-out constants stay unseen by both.
    """
    if not 0.0 < train_share < 1.0:
        raise ValueError(f"train_share must be strictly between 0 and 1, got {train_share}")
    n_heldout = _n_heldout(n_per_family, heldout_fraction)
    train: list[Problem] = []
    heldout: list[Problem] = []
    for name, values in _shuffled_domains(seed):
        reserved = values[: _cut(heldout_fraction, len(values))]
        if len(reserved) < 2:
            raise ValueError(f"family {name!r} reserves {len(reserved)} value(s): too few to share")
        cut = min(max(1, int(train_share * len(reserved))), len(reserved) - 1)
        heldout += generate_instances(name, n_heldout, seed, reserved[cut:])
        train += generate_instances(
            name, n_per_family - n_heldout, seed if instance_seed is None else instance_seed, reserved[:cut]
        )
    return train, heldout


def _n_heldout(n_per_family: int, heldout_fraction: float) -> int:
    if not 0.0 < heldout_fraction < 1.0:
        raise ValueError(f"heldout_fraction must be strictly between 0 and 1, got {heldout_fraction}")
    if n_per_family < 2:
        raise ValueError(
            f"n_per_family must be at least 2 (one training and one held-out), got {n_per_family}"
        )
    return min(max(1, round(n_per_family * heldout_fraction)), n_per_family - 1)


def _cut(heldout_fraction: float, n_values: int) -> int:
    return max(1, math.ceil(heldout_fraction * n_values))


def _shuffled_domains(seed: int) -> list[tuple[str, list[Any]]]:
    """Each family's constant domain in the seed's order; its first values are the held-out ones."""
    out = []
    for name, fam in FAMILIES.items():
        values = list(fam.domain)
        random.Random(f"split:{seed}:{name}").shuffle(values)
        out.append((name, values))
    return out


def _to_problem(fam: Family, value: Any, inst: Instance) -> Problem:
    prompt = humaneval_prompt(inst.signature, inst.doc, inst.tests)
    digest = hashlib.sha1(prompt.encode()).hexdigest()[:10]
    return Problem(
        task_id=f"synthetic/{fam.name}/{digest}",
        prompt=prompt,
        entry_point=inst.entry_point,
        test_code="\n".join(inst.tests) + "\n",
        test_format="asserts",
        solutions=[prompt + textwrap.indent(body, "    ") + "\n" for body in inst.bodies],
        description=" ".join(inst.doc.split()),
        difficulty=fam.difficulty,
        tags=[fam.name, *fam.tags, f"const:{value!r}"],
        source=f"synthetic:{fam.name}",
        prompt_is_code=True,
    )
