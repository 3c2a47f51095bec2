"""`GET /v1/metrics`'s two forms of the same metrics: Prometheus's text exposition (written by
prometheus_client) and Nomad's JSON (go-metrics' summary: Timestamp, Gauges, Counters,
Samples). A service's metrics carry its `service` and `instance` labels; the cluster's none.

Names are dotted in JSON (`drover.plan.apply`) and `drover_plan_apply_seconds` in Prometheus;
timings are in seconds there and in milliseconds in JSON, as Nomad's samples are."""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Iterator
from typing import Any

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector, CollectorRegistry

from drover.runtime.metrics import BUCKETS

PREFIX = "drover"
# Prometheus' HELP line of each metric (docs/metrics.md says more).
HELP = {
    "evals": "Evals held, by Status and TriggeredBy",
    "nodes": "Nodes by Status",
    "allocs": "Allocs by ClientStatus",
    "log.position": "The event log's last position (the cluster index)",
    "relay.position": "The last log position on the EVENTS stream",
    "relay.lag": "Committed events not yet on the EVENTS stream",
    "replica.position": "The log position a service's replica has applied",
    "replica.lag": "Events of the log a service's replica has yet to apply",
    "broker.queue": "The eval broker's queue by lane and state",
    "plan.queue_depth": "Plans waiting to be applied",
    "plan.queued": "A plan's wait in the plan queue",
    "plan.evaluate": "Verifying a plan against the cluster's state",
    "plan.apply": "From verifying a plan until it is in the log",
    "plan.placements": "Allocs placed by committed plans",
    "http.request": "API request latency by method and route",
}


def _labelled(snapshots: list[dict[str, Any]], kind: str) -> Iterator[tuple[dict[str, Any], dict[str, str]]]:
    """Each metric of `kind` with its process's labels added."""
    for snap in snapshots:
        for metric in snap.get(kind, []):
            yield metric, {**metric["Labels"], "service": snap["Service"], "instance": snap["Instance"]}


def _prom_name(name: str) -> str:
    return f"{PREFIX}_{name.replace('.', '_')}"


class _Metrics(Collector):
    def __init__(self, cluster: list[dict[str, Any]], snapshots: list[dict[str, Any]]) -> None:
        self.cluster = cluster
        self.snapshots = snapshots

    def collect(self) -> Iterable[Metric]:
        families: dict[str, Metric] = {}

        def family(name: str, make: Any, labels: list[str], suffix: str = "") -> Any:
            full = _prom_name(name) + suffix
            if full not in families:
                families[full] = make(full, HELP.get(name, name), labels=labels)
            return families[full]

        gauges = [(g, g["Labels"]) for g in self.cluster] + list(_labelled(self.snapshots, "Gauges"))
        for gauge, labels in gauges:
            keys = sorted(labels)
            family(gauge["Name"], GaugeMetricFamily, keys).add_metric(
                [labels[k] for k in keys], gauge["Value"]
            )
        for counter, labels in _labelled(self.snapshots, "Counters"):
            keys = sorted(labels)
            family(counter["Name"], CounterMetricFamily, keys).add_metric(
                [labels[k] for k in keys], counter["Sum"]
            )
        for timing, labels in _labelled(self.snapshots, "Timings"):
            keys = sorted(labels)
            cumulative, buckets = 0, []
            for bound, n in zip([*BUCKETS, math.inf], timing["Buckets"], strict=True):
                cumulative += n
                buckets.append(("+Inf" if bound == math.inf else repr(bound), cumulative))
            family(timing["Name"], HistogramMetricFamily, keys, "_seconds").add_metric(
                [labels[k] for k in keys], buckets, timing["Sum"]
            )
        return list(families.values())


def prometheus_text(cluster: list[dict[str, Any]], snapshots: list[dict[str, Any]]) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Metrics(cluster, snapshots))
    return generate_latest(registry)


def _sample(
    count: int, total: float, sumsq: float, low: float, high: float, seconds: float
) -> dict[str, Any]:
    mean = total / count if count else 0.0
    variance = (sumsq - count * mean * mean) / (count - 1) if count > 1 else 0.0
    return {
        "Count": count,
        "Rate": total / seconds if seconds > 0 else 0.0,
        "Sum": total,
        "Min": low,
        "Max": high,
        "Mean": mean,
        "Stddev": math.sqrt(max(variance, 0.0)),
    }


def nomad_json(cluster: list[dict[str, Any]], snapshots: list[dict[str, Any]]) -> dict[str, Any]:
    """Nomad's `/v1/metrics` document. Counters and samples count from each process's start
    (Nomad's from the start of its current interval); Rate is per second over that time."""
    gauges = [{"Name": f"{PREFIX}.{g['Name']}", "Value": g["Value"], "Labels": g["Labels"]} for g in cluster]
    counters, samples = [], []
    for snap in snapshots:
        labels = {"service": snap["Service"], "instance": snap["Instance"]}
        up = snap["Time"] - snap["Started"]
        for g in snap["Gauges"]:
            gauges.append(
                {"Name": f"{PREFIX}.{g['Name']}", "Value": g["Value"], "Labels": {**g["Labels"], **labels}}
            )
        for c in snap["Counters"]:
            summary = _sample(c["Count"], c["Sum"], c["SumSq"], c["Min"], c["Max"], up)
            counters.append({"Name": f"{PREFIX}.{c['Name']}", **summary, "Labels": {**c["Labels"], **labels}})
        for t in snap["Timings"]:
            ms = 1000.0
            summary = _sample(
                t["Count"], t["Sum"] * ms, t["SumSq"] * ms * ms, t["Min"] * ms, t["Max"] * ms, up
            )
            samples.append({"Name": f"{PREFIX}.{t['Name']}", **summary, "Labels": {**t["Labels"], **labels}})
    stamp = time.strftime("%Y-%m-%d %H:%M:%S +0000 UTC", time.gmtime())
    return {"Timestamp": stamp, "Gauges": gauges, "Points": [], "Counters": counters, "Samples": samples}
