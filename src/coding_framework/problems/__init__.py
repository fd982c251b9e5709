"""Problems: the model, benchmark loaders, the built-in training set and synthetic families."""

from coding_framework.problems.model import Difficulty, Problem, TestFormat

__all__ = ["Difficulty", "Problem", "TestFormat"]
