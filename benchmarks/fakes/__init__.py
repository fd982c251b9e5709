"""Fakes the benchmarks and the tests share: a scripted chat model (``chat``) and engine (``engine``), a tiny
random model (``models``) and training run (``tiny_run``), a local Ray cluster that loses nodes
(``ray_cluster``), recording rollout hooks and simulated traffic (``rollouts``), and a fast
OpenAI-compatible upstream (``upstream``). They live here, not under tests/, because benchmarks never
import from tests/."""
