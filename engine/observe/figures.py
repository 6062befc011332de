"""A running topology's figures as plain JSON data, read from the counters the engine keeps.

Nothing here runs per tuple: every figure is a counter, a reservoir or a queue length that
the hot path maintains anyway, summed when asked. User ``metrics()`` methods are called
here, when figures are read, and a failing one is logged (at most once a minute per
component) and left out.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from engine.config import TOPOLOGY_MAX_SPOUT_PENDING, TOPOLOGY_MESSAGE_TIMEOUT_SECS
from engine.queues import QueueStats
from engine.stats import LatencyHistogram, LatencyReservoir, TaskStats

if TYPE_CHECKING:
    from engine.runtime import RunningTopology

__all__ = ["component_errors", "task_metrics", "topology_stats", "topology_status"]

log = logging.getLogger("engine.observe")

_METRICS_LOG_EVERY_SECS = 60.0
_last_metrics_log: dict[tuple[str, str], float] = {}


def _latency(reservoir: LatencyReservoir) -> dict[str, Any]:
    p50, p99 = reservoir.percentiles_ms(0.5, 0.99)
    return {"p50": p50, "p99": p99, "samples": reservoir.count,
            "sum_secs": round(reservoir.total, 6),
            "buckets": list(reservoir.histogram.counts) if reservoir.histogram else None}


def _summed(histograms: list[LatencyHistogram]) -> list[int]:
    """Bucket counts added up over several histograms (they share ``LATENCY_BUCKETS``)."""
    return [sum(counts) for counts in zip(*(h.counts for h in histograms), strict=True)]


def _merged(reservoirs: list[LatencyReservoir]) -> dict[str, float | None]:
    """p50 and p99 (ms) over the samples of several reservoirs (``buckets`` is added by the
    caller)."""
    ordered: list[float] = []
    for r in reservoirs:
        ordered += r.values()
    ordered.sort()
    if not ordered:
        return {"p50": None, "p99": None}
    last = len(ordered) - 1
    return {key: round(ordered[min(last, int(q * len(ordered)))] * 1000, 3)
            for key, q in (("p50", 0.5), ("p99", 0.99))}


def _bolt_latencies(rt: RunningTopology) -> dict[str, dict[str, Any]]:
    """Per bolt: execute and process latency percentiles over all its executors' batches,
    and the per-tuple histograms' ``buckets``."""
    by_component: dict[str, list[Any]] = {}
    for bex in rt.bolt_executors:
        by_component.setdefault(bex.component, []).append(bex.times)
    return {cid: {"execute_latency_ms": {**_merged([t.execute for t in times]),
                                         "buckets": _summed([t.execute_histogram
                                                             for t in times])},
                  "process_latency_ms": {**_merged([t.process for t in times]),
                                         "buckets": _summed([t.process_histogram
                                                             for t in times])}}
            for cid, times in by_component.items()}


def _totals(per_task: list[TaskStats], spout: bool) -> dict[str, int]:
    totals = TaskStats().as_dict(spout)
    for stats in per_task:
        for key, value in stats.as_dict(spout).items():
            totals[key] = totals.get(key, 0) + value
    return totals


def _queue(queue: QueueStats) -> dict[str, int]:
    """An executor's receive queue: tuples held, bound and peak (tuples), batches, waiters."""
    return {"size": queue.size, "maxsize": queue.maxsize, "peak": queue.peak,
            "batches": queue.batches, "blocked_putters": queue.blocked_putters}


def _executors(rt: RunningTopology) -> list[dict[str, Any]]:
    """One entry per spout and bolt executor: its tasks, queue and time figures."""
    out: list[dict[str, Any]] = []
    for sex in rt.spout_executors:
        ids = [t.task_id for t in sex.tasks]
        queue = sex.queue.stats()
        out.append({"component": sex.component, "kind": "spout", "tasks": [ids[0], ids[-1]],
                    "transferred": sex.outbox.transferred, "pending": sex.pending(),
                    "in_flight_limit": sex.in_flight_limit(),
                    "pending_bytes": sex.pending_bytes(),
                    "queue": _queue(queue)})
    for bex in rt.bolt_executors:
        ids = [t.task_id for t in bex.tasks]
        queue = bex.queue.stats()
        times = bex.times
        out.append({"component": bex.component, "kind": "bolt", "tasks": [ids[0], ids[-1]],
                    "transferred": bex.outbox.transferred,
                    "executed": times.tuples, "batches": times.batches,
                    "execute_secs": round(times.execute_secs, 6),
                    "process_secs": round(times.process_secs, 6),
                    "queue": _queue(queue)})
    return out


def topology_stats(rt: RunningTopology) -> dict[str, Any]:
    """Everything ``LocalCluster.stats`` returns; plain JSON data (``json.dumps`` works).

    ``components[id]`` holds the summed task counters (``emitted``, ``executed``,
    ``acked``, ``failed``, ``errors`` and any further counter the tasks keep), plus
    ``kind``, ``executors``, ``executor_ids`` (indexes into ``executors``), ``tasks`` and
    ``transferred``; spouts add ``pending``, ``pending_bytes`` and
    ``in_flight_limit``, bolts ``execute_secs``, ``process_secs`` and the p50/p99 of
    ``execute_latency_ms`` and ``process_latency_ms`` over recent batches.
    """
    executors = _executors(rt)
    return {
        "name": rt.name,
        "status": topology_status(rt),
        "uptime_secs": round(rt.clock() - rt.started_at, 3) if rt.started_at else 0.0,
        "pending": sum(len(a.ledger) for a in rt.ackers),
        "spout_pending": rt.spout_pending(),
        "message_timeout_secs": rt.conf.get(TOPOLOGY_MESSAGE_TIMEOUT_SECS),
        "max_spout_pending": rt.conf.get(TOPOLOGY_MAX_SPOUT_PENDING),
        "components": _components(rt, executors),
        "complete_latency_ms": _latency(rt.latency),
        "executors": executors,
        "queues": {str(i): ex["queue"] for i, ex in enumerate(executors)},
        "metrics": task_metrics(rt),
        "stalled": rt.stalls.stalled(),
    }


def _components(rt: RunningTopology, executors: list[dict[str, Any]]) -> dict[str, Any]:
    """``topology_stats``'s ``components``: task counters summed, executor figures added."""
    components: dict[str, dict[str, Any]] = {}
    kinds = {d.id: d.kind for d in rt.topology.components.values()}
    for cid, per_task in rt.task_stats.items():
        entry: dict[str, Any] = dict(_totals(per_task, kinds.get(cid) == "spout"))
        entry["kind"] = kinds.get(cid, "acker")
        entry["tasks"] = len(per_task)
        entry["executors"] = 0
        entry["executor_ids"] = []
        entry["transferred"] = 0
        components[cid] = entry
    for i, ex in enumerate(executors):
        entry = components[ex["component"]]
        entry["executors"] += 1
        entry["executor_ids"].append(i)
        entry["transferred"] += ex["transferred"]
        if ex["kind"] == "spout":
            entry["pending"] = entry.get("pending", 0) + ex["pending"]
            entry["pending_bytes"] = entry.get("pending_bytes", 0) + ex["pending_bytes"]
            entry["in_flight_limit"] = _limit_sum(entry.get("in_flight_limit", 0),
                                                  ex["in_flight_limit"])
        else:
            entry["execute_secs"] = entry.get("execute_secs", 0.0) + ex["execute_secs"]
            entry["process_secs"] = entry.get("process_secs", 0.0) + ex["process_secs"]
    for cid, latencies in _bolt_latencies(rt).items():
        components[cid].update(latencies)
    if rt.ackers:  # trees decided: the ledgers count them
        acker = components["__acker"]
        acker["executors"] = len(rt.ackers)
        acker["acked"] = sum(a.ledger.acked for a in rt.ackers)
        acker["failed"] = sum(a.ledger.failed for a in rt.ackers)
        acker["timed_out"] = sum(a.ledger.timed_out for a in rt.ackers)
    return components


def _limit_sum(total: int | None, limit: int | None) -> int | None:
    """In-flight limits add up over executors; any unbounded executor makes it unbounded."""
    return None if total is None or limit is None else total + limit


def topology_status(rt: RunningTopology) -> str:
    """``ACTIVE``, ``STARTING`` (opening its spouts) or ``KILLED``."""
    if getattr(rt, "_killed", False) or any(not s.active for s in rt.spout_executors):
        return "KILLED"
    return "ACTIVE" if rt.started_at else "STARTING"


def _user_objects(rt: RunningTopology) -> list[tuple[str, int, Any]]:
    objs: list[tuple[str, int, Any]] = []
    for sex in rt.spout_executors:
        objs.extend((sex.component, t.task_id, t.obj) for t in sex.tasks)
    for bex in rt.bolt_executors:
        objs.extend((bex.component, t.task_id, _reporting(t.obj)) for t in bex.tasks)
    return objs


def _reporting(obj: Any) -> Any:
    """Whose ``metrics()`` a bolt task reports: an engine wrapper's own (which include its
    bolt's), else those of the task's running copy of the bolt it wraps (``bolt``, made at
    ``prepare``; not ``inner``, the topology's template, which never ran), through every
    layer of wrapping."""
    for _ in range(4):  # a checkpoint forwarder around a basic bolt's adapter, at most
        if callable(getattr(obj, "metrics", None)):
            return obj
        inner = getattr(obj, "bolt", None) or getattr(obj, "inner", None)
        if inner is None:
            return obj
        obj = inner
    return obj


def task_metrics(rt: RunningTopology) -> dict[str, dict[str, Any]]:
    """``{component: {task_id: metrics()}}`` for every task whose object has ``metrics``."""
    out: dict[str, dict[str, Any]] = {}
    for cid, task_id, obj in _user_objects(rt):
        method = getattr(obj, "metrics", None)
        if not callable(method):
            continue
        try:
            data = method()
            if not isinstance(data, dict):
                raise TypeError(f"returned {type(data).__name__}, expected a dict")
        except Exception as exc:
            _log_metrics_failure(rt, cid, task_id, exc)
            continue
        out.setdefault(cid, {})[str(task_id)] = data
    return out


def _log_metrics_failure(rt: RunningTopology, cid: str, task_id: int, exc: Exception) -> None:
    now = rt.clock()
    topology = rt.name
    key = (topology, cid)
    if now - _last_metrics_log.get(key, -_METRICS_LOG_EVERY_SECS) >= _METRICS_LOG_EVERY_SECS:
        _last_metrics_log[key] = now
        log.warning("topology %r component %r task %d: metrics() failed, left out of the "
                    "figures: %s: %s", topology, cid, task_id, type(exc).__name__, exc)


def component_errors(rt: RunningTopology, component: str,
                     detail: bool = True) -> list[dict[str, Any]]:
    """The component's recent errors over all its tasks, newest first (``detail`` False:
    exception types only, see ``RecentErrors.entries``)."""
    entries: list[dict[str, Any]] = []
    for sex in rt.spout_executors:
        if sex.component == component:
            for st in sex.tasks:
                entries.extend(st.collector.recent_errors.entries(detail))
    for bex in rt.bolt_executors:
        if bex.component == component:
            for bt in bex.tasks:
                entries.extend(bt.collector.recent_errors.entries(detail))
    entries.sort(key=lambda e: e["time"], reverse=True)
    return entries
