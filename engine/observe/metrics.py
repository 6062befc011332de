"""``/metrics``: Prometheus families built from ``stats()`` when scraped.

Every family is prefixed ``stormloop_``; counters end in ``_total``; times are seconds;
labels are ``topology`` and ``component`` (plus ``reason``, ``executor``, ``task``,
``topic``, ``partition`` where they apply). Nothing is recorded per tuple for this: a
scrape reads the counters, reservoirs and queues the engine keeps anyway.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
    SummaryMetricFamily,
)
from prometheus_client.registry import Collector, CollectorRegistry

from engine.observe.api import bolt_times
from engine.observe.figures import topology_stats
from engine.observe.reasons import fails_by_reason

if TYPE_CHECKING:
    from engine.observe.observer import Observer

__all__ = ["StormloopCollector", "registry_for"]

_TL = ["topology", "component"]
_COUNTERS = (("emitted", "tuples_emitted", "Tuples emitted."),
             ("transferred", "tuples_transferred", "Tuples handed to other tasks' queues."),
             ("executed", "tuples_executed", "Tuples executed (bolts; messages for acker)."),
             ("acked", "tuples_acked", "Tuples acked (spouts: trees fully processed)."),
             ("errors", "errors", "Errors reported by the component's tasks."))


class _Families:
    """The families of one scrape, filled topology by topology."""

    def __init__(self) -> None:
        c, g = CounterMetricFamily, GaugeMetricFamily
        self.counters = {key: c(f"stormloop_{name}", doc, labels=_TL)
                         for key, name, doc in _COUNTERS}
        self.failed = c("stormloop_tuples_failed", "Tuples failed, by reason (explicit "
                        "fail, tree timeout, error in user code).", labels=[*_TL, "reason"])
        self.complete = SummaryMetricFamily(
            "stormloop_complete_latency_seconds", "Time from a spout's emit to its tree's "
            "ack (sampled trees).", labels=["topology"])
        self.execute = SummaryMetricFamily(
            "stormloop_execute_latency_seconds", "Time in execute per tuple (quantiles over "
            "per-batch means).", labels=_TL)
        self.process = SummaryMetricFamily(
            "stormloop_process_latency_seconds", "Time from a tuple's batch being taken to "
            "its ack leaving.", labels=_TL)
        self.uptime = g("stormloop_uptime_seconds", "Seconds since the topology started.",
                        labels=["topology"])
        self.trees = g("stormloop_pending_trees", "Trees the ackers track now.",
                       labels=["topology"])
        self.pending = g("stormloop_spout_pending", "Tracked trees a spout waits on.",
                         labels=_TL)
        self.limit = g("stormloop_in_flight_limit", "Pending trees a spout may have "
                       "(topology.max.spout.pending over its executors); absent when "
                       "unbounded.", labels=_TL)
        self.capacity = g("stormloop_capacity", "Storm's capacity over the last 10 minutes: "
                          "executed x execute latency / window, busiest executor.", labels=_TL)
        self.queue_fill = g("stormloop_queue_fill_ratio", "Batches in an executor's receive "
                            "queue / its bound (topology.executor.receive.buffer.size).",
                            labels=[*_TL, "executor"])
        self._kafka()

    def _kafka(self) -> None:
        c, g = CounterMetricFamily, GaugeMetricFamily
        part = [*_TL, "task", "topic", "partition"]
        self.lag = g("stormloop_kafka_partition_lag", "Records behind the high watermark.",
                     labels=part)
        self.committed = g("stormloop_kafka_committed_offset", "Offset committed.", labels=part)
        self.high = g("stormloop_kafka_high_watermark", "Partition high watermark.",
                      labels=part)
        self.position = g("stormloop_kafka_position", "Next offset to fetch.", labels=part)
        task = [*_TL, "task"]
        self.failed_records = c("stormloop_kafka_failed_topic_records", "Records written to "
                                "the failed topic.", labels=task)
        self.failed_retries = c("stormloop_kafka_failed_topic_retries", "Retries of writes to "
                                "the failed topic.", labels=task)
        self.produced = c("stormloop_kafka_produced", "Records the Kafka bolt produced.",
                          labels=task)
        self.produce_errors = c("stormloop_kafka_produce_errors", "Kafka bolt produce "
                                "errors.", labels=task)

    def all(self) -> Iterator[Metric]:
        yield from self.counters.values()
        for family in vars(self).values():
            if isinstance(family, Metric):
                yield family


def _summary(family: SummaryMetricFamily, labels: dict[str, str],
             lat: Mapping[str, Any]) -> None:
    family.add_metric(list(labels.values()), lat["samples"], lat["sum_secs"])
    for key, quantile in (("p50", "0.5"), ("p99", "0.99")):
        if lat[key] is not None:
            family.add_sample(family.name, {**labels, "quantile": quantile}, lat[key] / 1000)


def _not_applicable(key: str, kind: str) -> bool:
    """Spouts execute nothing; ackers emit and transfer nothing."""
    return (kind == "spout" and key == "executed") or (
        kind == "acker" and key in ("emitted", "transferred"))


def _kafka(f: _Families, name: str, stats: Mapping[str, Any]) -> None:
    for cid, tasks in stats["metrics"].items():
        for task, data in tasks.items():
            labels = [name, cid, task]
            for p in data.get("partitions") or []:
                plabels = [*labels, str(p.get("topic")), str(p.get("partition"))]
                for family, key in ((f.lag, "lag"), (f.committed, "committed"),
                                    (f.high, "high_watermark"), (f.position, "position")):
                    if isinstance(p.get(key), int | float):
                        family.add_metric(plabels, p[key])
            for counter, key in ((f.failed_records, "failed_topic_records"),
                                 (f.failed_retries, "failed_topic_retries"),
                                 (f.produced, "produced"), (f.produce_errors, "produce_errors")):
                if isinstance(data.get(key), int | float):
                    counter.add_metric(labels, data[key])


def _topology(f: _Families, observer: Observer, name: str) -> None:
    rt = observer.runtime(name)
    stats = topology_stats(rt)
    ten_minutes = observer.deltas(rt, stats, ("600",))["600"]
    f.uptime.add_metric([name], stats["uptime_secs"])
    f.trees.add_metric([name], stats["pending"])
    _summary(f.complete, {"topology": name}, stats["complete_latency_ms"])
    for cid, comp in stats["components"].items():
        labels = [name, cid]
        for key, family in f.counters.items():
            if key in comp and not _not_applicable(key, comp["kind"]):
                family.add_metric(labels, comp[key])
        reasons = fails_by_reason(stats, cid)
        if comp["kind"] != "spout" and not any(k.startswith("failed_") for k in comp):
            reasons = {"explicit": reasons["explicit"]}  # a bolt's own fails: explicit
        for reason, n in reasons.items():
            f.failed.add_metric([*labels, reason], n)
        if comp["kind"] == "spout":
            f.pending.add_metric(labels, comp.get("pending", 0))
            if comp.get("in_flight_limit") is not None:
                f.limit.add_metric(labels, comp["in_flight_limit"])
        elif comp["kind"] == "bolt":
            capacity = bolt_times(stats, ten_minutes, cid)["capacity"]
            if capacity is not None:
                f.capacity.add_metric(labels, capacity)
            named = {"topology": name, "component": cid}
            _summary(f.execute, named, {**comp["execute_latency_ms"], "samples": comp["executed"],
                                        "sum_secs": comp["execute_secs"]})
            _summary(f.process, named, {**comp["process_latency_ms"], "samples": comp["executed"],
                                        "sum_secs": comp["process_secs"]})
    for ex in stats["executors"]:
        labels = [name, ex["component"], f"[{ex['tasks'][0]}-{ex['tasks'][1]}]"]
        q = ex["queue"]
        f.queue_fill.add_metric(labels, q["size"] / q["maxsize"] if q["maxsize"] else 0.0)
    _kafka(f, name, stats)


class StormloopCollector(Collector):
    """A ``prometheus_client`` collector over every topology an ``Observer`` sees."""

    def __init__(self, observer: Observer) -> None:
        self.observer = observer

    def collect(self) -> Iterator[Metric]:
        """The families of every running topology, read now."""
        families = _Families()
        for name in sorted(self.observer.runtimes()):
            _topology(families, self.observer, name)
        yield from families.all()


def registry_for(observer: Observer) -> CollectorRegistry:
    """A registry holding only the engine's collector (no process or platform families)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StormloopCollector(observer))
    return registry
