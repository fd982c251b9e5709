"""Rollouts and A/B tests: moving traffic from the champion to a candidate version, gated by always-valid
tests, with guardrails that roll back on their own.

``manager`` routes and decides; ``record`` is one rollout's record; ``api`` the request and status models
that the server and ``coding-framework deploy`` share; ``guardrails`` the checks that roll back;
``outcomes`` what a graded answer was; ``stats`` the sequential tests; ``arms`` per-version counters;
``assignment`` sticky sessions; ``probes`` probe sets; ``promotion`` MLflow runs and registry aliases.
The package imports none of them, so the CLI loads ``api`` alone.
"""

__all__: list[str] = []
