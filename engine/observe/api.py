"""The JSON API in Storm UI's field names, built from ``stats()`` and the window rings.

Counts are for the chosen window; latencies are milliseconds (averages over the window,
as Storm gives them); ``capacity`` is Storm's: executed x execute latency / window time,
the busiest executor of the component. ``timedOut``, ``pending`` and ``inFlightLimit``
are this engine's own additions, and so are the rates per second over the last minute
(``emittedPerSec``, ``ackedPerSec``, ``failedPerSec``, bolts' ``executedPerSec``; the
topology's ``rates``), ``failedRatio`` (failed / (acked + failed) in the window),
``spoutPending``, ``sameAsAllTime`` on a window row while uptime is shorter than it, and
``stages``: the input's spouts, then those behind each repartition hop, with their
all-time counts, trees pending and acks per second (as the runner's status line has them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.observe.reasons import fails_by_reason
from engine.observe.status import stages
from engine.observe.windows import ALL_TIME, RATE_WINDOW, WINDOWS, Delta, window_label

__all__ = ["bolt_json", "bolt_times", "component_json", "flatten", "spout_json",
           "topology_json", "topology_summary"]

_COUNTED = ("emitted", "transferred", "executed", "acked", "failed", "errors",
            "execute_secs", "process_secs")


def flatten(stats: Mapping[str, Any]) -> dict[str, float]:
    """The cumulative figures the windows are kept of, one flat key each."""
    out: dict[str, float] = {}
    for cid, comp in stats["components"].items():
        for key in _COUNTED:
            if key in comp:
                out[f"{cid}/{key}"] = comp[key]
        for reason, n in fails_by_reason(stats, cid).items():
            out[f"{cid}/failed:{reason}"] = n
    for i, ex in enumerate(stats["executors"]):
        if ex["kind"] == "bolt":
            out[f"#{i}/execute_secs"] = ex["execute_secs"]
            out[f"#{i}/tuples"] = ex["executed"]
            out[f"#{i}/process_secs"] = ex["process_secs"]
    lat = stats["complete_latency_ms"]
    out["complete/count"] = lat["samples"]
    out["complete/sum"] = lat["sum_secs"]
    return out


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value * 1000, 6)


def bolt_times(stats: Mapping[str, Any], delta: Delta, cid: str) -> dict[str, Any]:
    """``executeLatency``, ``processLatency`` (ms) and ``capacity`` of a bolt in a window."""
    execute = process = tuples = 0.0
    capacity: float | None = None
    for i in stats["components"][cid]["executor_ids"]:
        busy = delta[f"#{i}/execute_secs"]
        execute += busy
        process += delta[f"#{i}/process_secs"]
        tuples += delta[f"#{i}/tuples"]
        if delta.elapsed > 0:
            capacity = max(capacity or 0.0, busy / delta.elapsed)
    return {"executeLatency": _ms(execute / tuples) if tuples else None,
            "processLatency": _ms(process / tuples) if tuples else None,
            "capacity": None if capacity is None else round(capacity, 3)}


def _last_error(errors: Mapping[str, list[dict[str, Any]]], cid: str) -> str:
    recent = errors.get(cid) or []
    return recent[0]["error"] if recent else ""


def _counts(delta: Delta, cid: str, *keys: str) -> dict[str, int]:
    return {key: int(delta[f"{cid}/{key}"]) for key in keys}


def _rates(rate: Delta | None, cid: str, *keys: str) -> dict[str, float | None]:
    """``<key>PerSec`` over the rate window (``None`` before a second has passed)."""
    return {f"{key}PerSec": rate.per_sec(f"{cid}/{key}") if rate is not None else None
            for key in keys}


def _failed_ratio(delta: Delta, cid: str) -> float | None:
    """Failed over acked plus failed in the window; ``None`` when neither moved."""
    failed = delta[f"{cid}/failed"]
    done = failed + delta[f"{cid}/acked"]
    return round(failed / done, 4) if done else None


def spout_json(stats: Mapping[str, Any], delta: Delta, cid: str,
               errors: Mapping[str, list[dict[str, Any]]],
               rate: Delta | None = None) -> dict[str, Any]:
    """One entry of ``spouts``; ``rate`` is the delta the rates per second come from."""
    comp = stats["components"][cid]
    return {"spoutId": cid, "executors": comp["executors"], "tasks": comp["tasks"],
            **_counts(delta, cid, "emitted", "transferred", "acked", "failed"),
            **_rates(rate, cid, "emitted", "acked", "failed"),
            "failedRatio": _failed_ratio(delta, cid),
            "completeLatency": _ms(delta.ratio("complete/sum", "complete/count")),
            "timedOut": int(delta[f"{cid}/failed:timeout"]),
            "failedExplicit": int(delta[f"{cid}/failed:explicit"]),
            "failedError": int(delta[f"{cid}/failed:error"]),
            "errors": int(delta[f"{cid}/errors"]),
            "pending": comp.get("pending", 0), "inFlightLimit": comp.get("in_flight_limit"),
            "lastError": _last_error(errors, cid)}


def bolt_json(stats: Mapping[str, Any], delta: Delta, cid: str,
              errors: Mapping[str, list[dict[str, Any]]],
              rate: Delta | None = None) -> dict[str, Any]:
    """One entry of ``bolts``; ``rate`` is the delta the rates per second come from."""
    comp = stats["components"][cid]
    return {"boltId": cid, "executors": comp["executors"], "tasks": comp["tasks"],
            **_counts(delta, cid, "emitted", "transferred", "executed", "acked", "failed"),
            **_rates(rate, cid, "emitted", "executed", "acked", "failed"),
            "failedRatio": _failed_ratio(delta, cid),
            **bolt_times(stats, delta, cid),
            "errors": int(delta[f"{cid}/errors"]),
            "lastError": _last_error(errors, cid)}


def _topology_stats(stats: Mapping[str, Any], deltas: Mapping[str, Delta]) -> list[dict[str, Any]]:
    spouts = [cid for cid, c in stats["components"].items() if c["kind"] == "spout"]
    users = [cid for cid, c in stats["components"].items() if c["kind"] != "acker"]
    out = []
    for window in WINDOWS:
        d = deltas[window]
        out.append({"window": window, "windowPretty": window_label(window),
                    "sameAsAllTime": window != ALL_TIME
                    and stats["uptime_secs"] < int(window),
                    "emitted": int(sum(d[f"{c}/emitted"] for c in users)),
                    "transferred": int(sum(d[f"{c}/transferred"] for c in users)),
                    "completeLatency": _ms(d.ratio("complete/sum", "complete/count")),
                    "acked": int(sum(d[f"{c}/acked"] for c in spouts)),
                    "failed": int(sum(d[f"{c}/failed"] for c in spouts)),
                    "timedOut": int(sum(d[f"{c}/failed:timeout"] for c in spouts))})
    return out


def topology_summary(stats: Mapping[str, Any]) -> dict[str, Any]:
    """One entry of ``/api/v1/topologies``."""
    comps = [c for c in stats["components"].values() if c["kind"] != "acker"]
    return {"id": stats["name"], "name": stats["name"], "status": stats["status"],
            "uptimeSeconds": stats["uptime_secs"],
            "executorsTotal": sum(c["executors"] for c in comps),
            "tasksTotal": sum(c["tasks"] for c in comps),
            "pending": stats["pending"]}


def _partitions(stats: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for cid, tasks in stats["metrics"].items():
        for task, data in tasks.items():
            for p in data.get("partitions") or []:
                rows.append({"component": cid, "task": int(task), "topic": p.get("topic"),
                             "partition": p.get("partition"), "committed": p.get("committed"),
                             "highWatermark": p.get("high_watermark"), "lag": p.get("lag"),
                             "position": p.get("position")})
    return rows


def _topology_rates(stats: Mapping[str, Any], rate: Delta | None) -> dict[str, Any]:
    """Emitted (by every spout and bolt), acked and failed (trees) per second."""
    comps = stats["components"]
    spouts = [cid for cid, c in comps.items() if c["kind"] == "spout"]
    users = [cid for cid, c in comps.items() if c["kind"] != "acker"]
    secs = rate.elapsed if rate is not None and rate.elapsed >= 1.0 else None
    out: dict[str, Any] = {"windowSecs": None if secs is None else round(secs, 1)}
    for key, cids in (("emitted", users), ("acked", spouts), ("failed", spouts)):
        total = sum(rate[f"{cid}/{key}"] for cid in cids) if rate is not None else 0
        out[f"{key}PerSec"] = None if secs is None else round(total / secs, 3)
    return out


def _stages(stats: Mapping[str, Any], rate: Delta | None) -> list[dict[str, Any]]:
    """The input, then each stage behind a hop (``engine.observe.status.stages``)."""
    comps = stats["components"]
    out = []
    for stage in stages(comps):
        rates = [rate.per_sec(f"{cid}/acked") for cid in stage.spouts] if rate else [None]
        out.append({"stage": stage.label, "bolt": stage.bolt, "spouts": list(stage.spouts),
                    "emitted": sum(comps[cid]["emitted"] for cid in stage.spouts),
                    "acked": sum(comps[cid]["acked"] for cid in stage.spouts),
                    "pending": sum(comps[cid].get("pending", 0) for cid in stage.spouts),
                    "ackedPerSec": None if None in rates else round(sum(
                        r for r in rates if r is not None), 3)})
    return out


def topology_json(stats: Mapping[str, Any], window: str, deltas: Mapping[str, Delta],
                  errors: Mapping[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """``/api/v1/topology/{name}?window=...``; ``deltas`` holds every window's ``Delta``
    (and ``RATE_WINDOW``'s, for the rates)."""
    d, rate = deltas[window], deltas.get(RATE_WINDOW)
    comps = stats["components"]
    recent = sorted(({"component": cid, **e} for cid, es in errors.items() for e in es),
                    key=lambda e: e["time"], reverse=True)[:20]
    return {**topology_summary(stats), "window": window, "windowHint": window_label(window),
            "messageTimeoutSecs": stats.get("message_timeout_secs"),
            "spoutPending": stats.get("spout_pending"),
            "rates": _topology_rates(stats, rate),
            "stages": _stages(stats, rate),
            "topologyStats": _topology_stats(stats, deltas),
            "spouts": [spout_json(stats, d, cid, errors, rate)
                       for cid, c in comps.items() if c["kind"] == "spout"],
            "bolts": [bolt_json(stats, d, cid, errors, rate)
                      for cid, c in comps.items() if c["kind"] == "bolt"],
            "kafkaPartitions": _partitions(stats),
            "errors": recent}


def component_json(stats: Mapping[str, Any], cid: str, window: str,
                   deltas: Mapping[str, Delta], errors: list[dict[str, Any]],
                   now_epoch: float) -> dict[str, Any]:
    """``/api/v1/topology/{name}/component/{id}``: figures, executors and recent errors;
    ``deltas`` holds ``window``'s ``Delta`` and ``RATE_WINDOW``'s."""
    comp = stats["components"][cid]
    by_cid = {cid: errors}
    body = (spout_json if comp["kind"] == "spout" else bolt_json)(
        stats, deltas[window], cid, by_cid, deltas.get(RATE_WINDOW))
    executors = [{"id": f"[{ex['tasks'][0]}-{ex['tasks'][1]}]", "queue": ex["queue"],
                  "transferred": ex["transferred"]}
                 for ex in stats["executors"] if ex["component"] == cid]
    return {"id": cid, "name": cid, "componentType": comp["kind"], "topologyId": stats["name"],
            "window": window, "windowHint": window_label(window), **body,
            "executorStats": executors,
            "metrics": stats["metrics"].get(cid, {}),
            "componentErrors": [{**e, "errorLapsedSecs": round(now_epoch - e["time"], 1)}
                                for e in errors]}
