"""Data curation: difficulty by a reference policy's pass rate, test strength by mutation testing (with
differential-test strengthening), and dataset statistics. Augmentation lives in ``problems.augment``."""

from coding_framework.curation.filtering import FilterReport, filter_by_strength
from coding_framework.curation.mutants import OPERATORS, Mutant, mutants
from coding_framework.curation.ranking import by_pass_rate, pass_rates, with_pass_rates
from coding_framework.curation.stats import dataset_stats, plot_distributions, test_count
from coding_framework.curation.strength import (
    Strength,
    dataset_kill_rate,
    measure_strength,
    problem_mutants,
    with_strength,
)
from coding_framework.curation.strengthen import candidate_calls, strengthen

__all__ = [
    "OPERATORS",
    "FilterReport",
    "Mutant",
    "Strength",
    "by_pass_rate",
    "candidate_calls",
    "dataset_kill_rate",
    "dataset_stats",
    "filter_by_strength",
    "measure_strength",
    "mutants",
    "pass_rates",
    "plot_distributions",
    "problem_mutants",
    "strengthen",
    "test_count",
    "with_pass_rates",
    "with_strength",
]
