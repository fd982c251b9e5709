"""Problems: the model, benchmark loaders, the built-in training set and synthetic families."""

from coding_framework.problems._io import ProblemLoadError
from coding_framework.problems.augment import augment, augment_split, check_no_leak, root_task_id
from coding_framework.problems.benchmarks import BENCHMARKS, load_benchmark, register_benchmark
from coding_framework.problems.builtin import builtin_problems
from coding_framework.problems.humaneval import load_humaneval
from coding_framework.problems.mbpp import load_mbpp, mbpp_few_shot_prompt, with_few_shot_prompt
from coding_framework.problems.problem import Difficulty, Problem, TestFormat
from coding_framework.problems.records import load_problem_records, write_problem_records
from coding_framework.problems.synthetic import FAMILIES, generate_instances, reserved_split, synthetic_split

__all__ = [
    "BENCHMARKS",
    "FAMILIES",
    "Difficulty",
    "Problem",
    "ProblemLoadError",
    "TestFormat",
    "augment",
    "augment_split",
    "builtin_problems",
    "check_no_leak",
    "generate_instances",
    "load_benchmark",
    "load_humaneval",
    "load_mbpp",
    "load_problem_records",
    "mbpp_few_shot_prompt",
    "register_benchmark",
    "reserved_split",
    "root_task_id",
    "synthetic_split",
    "with_few_shot_prompt",
    "write_problem_records",
]
