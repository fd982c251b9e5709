"""The benchmarks, run from the repository root as modules: ``python -m benchmarks.<group>.<name>``.

- ``grading/``: the grader and sandbox against other harnesses, and the problem sets they grade against;
- ``training/``: the quickstart, RL algorithms, adapters, rollout engines, precision and scale-out;
- ``serving/``: the server, rollouts and their statistics;
- ``harness``: the one import for filing a result (``RESULTS``, ``LoadMonitor``, ``write_result``).

The fakes the benchmarks share with the tests are in ``coding_framework.testing``.

Results go to ``benchmarks/results/`` through ``write_result``, which records how each was made.
"""
