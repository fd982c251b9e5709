"""Fakes for the boundaries, which the tests and the benchmarks both import (``from
coding_framework.testing.chat import ScriptedChatModel``): a scripted chat model (``chat``), engine
(``engine``) and verl server (``verl_server``), an in-process grader for trusted code (``grader``), a small
problem (``problems``), a tiny random model (``models``) and training run (``tiny_run``), a local Ray cluster
that loses nodes (``ray_cluster``), recording rollout hooks and simulated traffic (``rollouts``), and a fast
OpenAI-compatible upstream (``upstream``).

Nothing in the product imports this package (its layer is above every other), so no fake becomes a default.
Each module imports only what its fake needs; import the module, not this package.
"""

__all__: list[str] = []  # a namespace of modules: import from them
