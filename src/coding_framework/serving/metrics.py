"""GET /metrics: the server's figures in Prometheus' text exposition format (``prometheus-client``).

Counters are plain dicts bumped on the request path and turned into metric families at scrape time (a
custom collector), so a request pays a dict increment and one histogram observation. Per version:
``coding_framework_requests_total{version,outcome}`` (outcome ``ok`` or ``error``),
``coding_framework_errors_total{version,kind}`` (the error's code), the
``coding_framework_request_latency_seconds`` histogram, ``coding_framework_tokens_total``,
``coding_framework_graded_total{version,source,outcome}``, ``coding_framework_graded_pass_ratio{version,
source}`` (source ``client`` or ``probe``) and ``coding_framework_probe_requests_total{version,outcome}``.
Server-wide: ``coding_framework_queue_depth``, ``coding_framework_replica_healthy{version,replica}``,
``coding_framework_champion_info{version}``, ``coding_framework_rollout_status{rollout,status}`` and
``coding_framework_rollout_candidate_weight{rollout,candidate}`` (the latest rollout),
``coding_framework_failovers_total{from_version,to_version}`` and ``coding_framework_failover_active``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from coding_framework.serving.rollouts.outcomes import Outcome, Source

__all__ = ["CONTENT_TYPE", "Metrics"]

CONTENT_TYPE = CONTENT_TYPE_LATEST
P = "coding_framework_"
_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


class Observed(Protocol):
    """What the scrape reads from the server (``server_context.Server``)."""

    admission: Any
    deployments: Any
    failover: Any
    manager: Any

    @property
    def rollouts(self) -> Any: ...


class Metrics(Collector):
    """The server's counters; ``render`` is the /metrics body."""

    def __init__(self, server: Observed) -> None:
        self._server = server
        self.requests: defaultdict[tuple[str, str], int] = defaultdict(int)
        self.errors: defaultdict[tuple[str, str], int] = defaultdict(int)
        self.tokens: defaultdict[str, int] = defaultdict(int)
        self.graded: defaultdict[tuple[str, str, str], int] = defaultdict(int)
        self.probes: defaultdict[tuple[str, str], int] = defaultdict(int)
        self.failovers: defaultdict[tuple[str, str], int] = defaultdict(int)
        self.registry = CollectorRegistry(auto_describe=False)
        self._latency = Histogram(f"{P}request_latency_seconds", "Latency of answered requests per version.",
                                  ["version"], buckets=_BUCKETS, registry=self.registry)
        self._latency_of: dict[str, Histogram] = {}
        self.registry.register(self)

    def request(self, version: str, latency_s: float, error: str | None, tokens: int) -> None:
        """One request answered by (or failed on) ``version``; ``error`` is its code, None when it ok."""
        if error is None:
            self.requests[version, "ok"] += 1
            self.tokens[version] += tokens
            child = self._latency_of.get(version)
            if child is None:
                child = self._latency_of[version] = self._latency.labels(version)
            child.observe(latency_s)
        else:
            self.requests[version, "error"] += 1
            self.errors[version, error] += 1

    def grade(self, version: str, outcome: Outcome, source: Source) -> None:
        self.graded[version, source, outcome.value] += 1

    def probe(self, version: str, error: str | None) -> None:
        self.probes[version, "ok" if error is None else "error"] += 1
        if error is not None:
            self.errors[version, f"probe_{error}"] += 1

    def failover(self, old: str, new: str) -> None:
        self.failovers[old, new] += 1

    def render(self) -> bytes:
        return generate_latest(self.registry)

    def collect(self) -> Iterator[Metric]:
        yield _counter("requests", "Requests per version and outcome.", ["version", "outcome"], self.requests)
        yield _counter("errors", "Failed requests per version and error code.", ["version", "kind"],
                       self.errors)
        yield _counter("tokens", "Generated tokens per version.", ["version"],
                       {(v,): n for v, n in self.tokens.items()})
        yield _counter("graded", "Graded answers per version, source and outcome.",
                       ["version", "source", "outcome"], self.graded)
        yield _counter("probe_requests", "Probe problems sent per version and outcome.",
                       ["version", "outcome"], self.probes)
        yield _counter("failovers", "Switches of the champion's traffic to another version.",
                       ["from_version", "to_version"], self.failovers)
        yield self._pass_ratio()
        yield from self._server_gauges()

    def _pass_ratio(self) -> GaugeMetricFamily:
        family = GaugeMetricFamily(f"{P}graded_pass_ratio", "Passed / graded answers per version and source.",
                                   labels=["version", "source"])
        totals: defaultdict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
        for (version, source, outcome), n in list(self.graded.items()):
            totals[version, source][0] += n * (outcome == Outcome.PASSED.value)
            totals[version, source][1] += n
        for (version, source), (passed, graded) in totals.items():
            family.add_metric([version, source], passed / graded)
        return family

    def _server_gauges(self) -> Iterator[Metric]:
        server = self._server
        yield _gauge("queue_depth", "Requests running or waiting for a slot.", [],
                     {(): server.admission.pending})
        health = {(vid, slot.replica.name): float(slot.healthy)
                  for vid, pool in list(server.deployments.pools.items()) for slot in pool.slots}
        yield _gauge("replica_healthy", "1 while a replica is in rotation.", ["version", "replica"], health)
        if server.manager is None:
            return
        yield _gauge("champion_info", "The champion version (value 1).", ["version"],
                     {(server.rollouts.champion,): 1})
        yield _gauge("failover_active", "1 while the champion's traffic goes to the failover version.", [],
                     {(): float(server.failover.active)})
        rollouts = server.rollouts.list()
        if rollouts:
            last = rollouts[-1]
            yield _gauge("rollout_status", "The latest rollout's status (value 1).", ["rollout", "status"],
                         {(last["id"], last["status"]): 1})
            candidate = last["candidate_version"]
            yield _gauge("rollout_candidate_weight", "Percent of new sessions the candidate gets.",
                         ["rollout", "candidate"], {(last["id"], candidate): last["weights"][candidate]})


def _counter(name: str, doc: str, labels: list[str], values: Mapping[Any, int]) -> CounterMetricFamily:
    family = CounterMetricFamily(f"{P}{name}", doc, labels=labels)
    for key, n in list(values.items()):
        family.add_metric(list(key), n)
    return family


def _gauge(name: str, doc: str, labels: list[str], values: Mapping[Any, float]) -> GaugeMetricFamily:
    family = GaugeMetricFamily(f"{P}{name}", doc, labels=labels)
    for key, value in values.items():
        family.add_metric(list(key), value)
    return family
