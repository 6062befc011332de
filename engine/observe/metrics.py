"""``/metrics``: Prometheus families built from ``stats()`` when scraped.

Every family is prefixed ``stormloop_``; counters end in ``_total``; times are seconds;
latencies are histograms over fixed buckets (``engine.stats.LATENCY_BUCKETS``), so the
series of several processes add up; labels are ``topology`` and ``component`` (plus
``reason``, ``executor``, ``task``, ``topic``, ``partition`` where they apply; a Kafka
partition's series have no ``task``: a rebalance moves partitions between tasks). A
family with no series (the Kafka ones in a topology without Kafka) is left out. Nothing is
recorded per tuple for this: a scrape reads the counters, histograms and queues the engine
keeps anyway. ``registry_for`` adds the standard ``process_*`` and ``python_*`` families.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from prometheus_client import GCCollector, PlatformCollector, ProcessCollector
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector, CollectorRegistry

from engine.observe.api import bolt_times
from engine.observe.figures import topology_stats
from engine.observe.reasons import fails_by_reason
from engine.observe.windows import Delta
from engine.stats import LATENCY_BUCKETS

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
        h = HistogramMetricFamily
        self.complete = h(
            "stormloop_complete_latency_seconds", "Time from a spout's emit to its tree's "
            "ack (sampled trees).", labels=["topology"])
        self.execute = h(
            "stormloop_execute_latency_seconds", "Time in execute per tuple (each tuple "
            "counted at its batch's mean).", labels=_TL)
        self.process = h(
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
        self._kafka_families()

    def _kafka_families(self) -> None:
        c, g = CounterMetricFamily, GaugeMetricFamily
        part = [*_TL, "topic", "partition"]
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
        self.restores = c("stormloop_state_restores", "Input partitions whose state a "
                          "stateful bolt restored from its changelog.", labels=task)
        self.restored = c("stormloop_state_restored_records", "Changelog records applied "
                          "by those restores.", labels=task)
        self.restoring = g("stormloop_state_restoring_partitions", "Input partitions whose "
                           "state is being restored now (their tuples wait).", labels=task)
        self.standby = g("stormloop_state_standby_partitions", "Input partitions this "
                         "process keeps a standby copy of (topology.state.standby.replicas).",
                         labels=task)

    def all(self) -> Iterator[Metric]:
        """The families that have at least one series."""
        families = [*self.counters.values(),
                    *(f for f in vars(self).values() if isinstance(f, Metric))]
        yield from (f for f in families if f.samples)


_LE = [*(repr(bound) for bound in LATENCY_BUCKETS), "+Inf"]


def _histogram(family: HistogramMetricFamily, labels: list[str], counts: list[int],
               sum_secs: float) -> None:
    """One histogram series from per-bucket ``counts`` (made cumulative here)."""
    cumulative, running = [], 0
    for le, n in zip(_LE, counts, strict=True):
        running += n
        cumulative.append((le, running))
    family.add_metric(labels, cumulative, sum_secs)


def _not_applicable(key: str, kind: str) -> bool:
    """Spouts execute nothing; ackers emit and transfer nothing."""
    return (kind == "spout" and key == "executed") or (
        kind == "acker" and key in ("emitted", "transferred"))


def _partitions(tasks: Mapping[str, Any]) -> dict[tuple[str, str], Mapping[str, Any]]:
    """One figure set per (topic, partition) of a component. While a rebalance hands a
    partition over, two tasks may report it: the one further on (higher position) wins."""
    out: dict[tuple[str, str], Mapping[str, Any]] = {}
    for data in tasks.values():
        for p in data.get("partitions") or []:
            key = (str(p.get("topic")), str(p.get("partition")))
            held = out.get(key)
            if held is None or (p.get("position") or -1) > (held.get("position") or -1):
                out[key] = p
    return out


def _kafka(f: _Families, name: str, stats: Mapping[str, Any]) -> None:
    for cid, tasks in stats["metrics"].items():
        for (topic, partition), p in _partitions(tasks).items():
            for family, key in ((f.lag, "lag"), (f.committed, "committed"),
                                (f.high, "high_watermark"), (f.position, "position")):
                if isinstance(p.get(key), int | float):
                    family.add_metric([name, cid, topic, partition], p[key])
        for task, data in tasks.items():
            for counter, key in ((f.failed_records, "failed_topic_records"),
                                 (f.failed_retries, "failed_topic_retries"),
                                 (f.produced, "produced"), (f.produce_errors, "produce_errors"),
                                 (f.restores, "state_restores"),
                                 (f.restored, "state_restored_records"),
                                 (f.restoring, "state_restoring"),
                                 (f.standby, "state_standby_partitions")):
                if isinstance(data.get(key), int | float):
                    counter.add_metric([name, cid, task], data[key])


def _reasons(stats: Mapping[str, Any], cid: str, comp: Mapping[str, Any]) -> dict[str, int]:
    """Fails by reason. The acker fails trees itself only when they time out (other fails
    reach it as messages, counted where they happen); a bolt's own fails are explicit."""
    if comp["kind"] == "acker":
        return {"timeout": int(comp.get("timed_out", 0))}
    reasons = fails_by_reason(stats, cid)
    if comp["kind"] != "spout" and not any(k.startswith("failed_") for k in comp):
        return {"explicit": reasons["explicit"]}
    return reasons


def _bolt(f: _Families, stats: Mapping[str, Any], ten_minutes: Delta,
          labels: list[str], comp: Mapping[str, Any]) -> None:
    capacity = bolt_times(stats, ten_minutes, labels[1])["capacity"]
    if capacity is not None:
        f.capacity.add_metric(labels, capacity)
    _histogram(f.execute, labels, comp["execute_latency_ms"]["buckets"], comp["execute_secs"])
    _histogram(f.process, labels, comp["process_latency_ms"]["buckets"], comp["process_secs"])


def _component(f: _Families, stats: Mapping[str, Any], ten_minutes: Delta,
               labels: list[str], comp: Mapping[str, Any]) -> None:
    for key, family in f.counters.items():
        if key in comp and not _not_applicable(key, comp["kind"]):
            family.add_metric(labels, comp[key])
    for reason, n in _reasons(stats, labels[1], comp).items():
        f.failed.add_metric([*labels, reason], n)
    if comp["kind"] == "spout":
        f.pending.add_metric(labels, comp.get("pending", 0))
        if comp.get("in_flight_limit") is not None:
            f.limit.add_metric(labels, comp["in_flight_limit"])
    elif comp["kind"] == "bolt":
        _bolt(f, stats, ten_minutes, labels, comp)


def _topology(f: _Families, observer: Observer, name: str) -> None:
    rt = observer.runtime(name)
    stats = topology_stats(rt)
    ten_minutes = observer.deltas(rt, stats, ("600",))["600"]
    f.uptime.add_metric([name], stats["uptime_secs"])
    f.trees.add_metric([name], stats["pending"])
    lat = stats["complete_latency_ms"]
    _histogram(f.complete, [name], lat["buckets"], lat["sum_secs"])
    for cid, comp in stats["components"].items():
        _component(f, stats, ten_minutes, [name, cid], comp)
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
    """A registry holding the engine's collector and prometheus_client's standard ones:
    ``process_*`` (CPU, memory, open files; where /proc exists), ``python_info`` and
    ``python_gc_*``."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StormloopCollector(observer))
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    return registry
