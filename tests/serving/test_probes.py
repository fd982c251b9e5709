"""Probe sets are problem sources as everywhere else: a benchmark split is read from
$CODING_FRAMEWORK_DATA_DIR when it is there, never from the hub."""

from __future__ import annotations

from pathlib import Path

import pytest

from coding_framework.problems import mbpp
from coding_framework.problems.sources import DATA_DIR_ENV
from coding_framework.serving.rollouts.probes import load_probe_set, probe_order


def test_a_probe_split_loads_from_the_data_dir_without_the_hub(shared_data: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    def no_hub(*args: object, **kwargs: object) -> None:
        raise AssertionError("the probe set went to the hub")

    monkeypatch.setattr(mbpp, "hub_records", no_hub)
    monkeypatch.setenv(DATA_DIR_ENV, str(shared_data))
    problems = load_probe_set("mbpp:validation")
    assert [p.task_id for p in problems] == [f"Mbpp/{n}" for n in range(511, 601)]


def test_a_bad_probe_source_is_a_one_line_error() -> None:
    with pytest.raises(ValueError, match=r"^probe source 'no-such-bench': unknown problem source") as err:
        load_probe_set("no-such-bench")
    assert "\n" not in str(err.value)


def test_probes_go_in_an_order_shuffled_by_the_rollout_and_kept_across_a_restart() -> None:
    problems = load_probe_set("synthetic:train")
    order = probe_order("ro-1", problems)
    assert sorted(p.task_id for p in order) == sorted(p.task_id for p in problems)
    assert probe_order("ro-1", problems) == order  # a resumed rollout continues the same order
    assert probe_order("ro-2", problems) != order
    families = [p.task_id.split("/")[1] for p in order[:40]]
    assert len(set(families)) > 5  # the first probes sample many families, not the first one
