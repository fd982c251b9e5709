"""Fakes only the tests use (``from tests.fakes.grader import ...``). The fakes benchmarks share with the
tests (a scripted chat model and engine, a tiny model and run, a mock upstream, rollout hooks) live in
``benchmarks.fakes``, since benchmarks never import from tests/."""
