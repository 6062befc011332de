"""The runner's status line, stage by stage: the input, then each stage behind a hop.

A topology scaled out over processes (``topology.workers`` > 1) carries each fields
grouping through a repartition topic (``engine/keyed/hops.py``): the input spouts' trees
complete once the hop's writer has the record, and the stage behind the hop (its reader
spout ``__<bolt>-repartition`` and the bolts it feeds) starts trees of its own. The input's
figures alone then say the work is done while that stage is still busy, so the line gives
each stage's figures apart::

    [wc 25s] input: emitted=120000 acked=120000 ... pending=0 ... acked/s=0 latency ...
     | behind hop 'count': emitted=120000 acked=81000 failed=0 timeouts=0 pending=39000
     acked/s=9,000

(one line; without a hop the line has no ``input:`` label and no ``|`` part).
``stages`` is the one place that says which spouts make up which stage: the status page's
header reads it too. ``parse_figures`` and ``hop_part`` let the supervisor of several
worker processes read the workers' lines and print their sums the same way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

from engine.keyed.hops import reader_id
from engine.observe.reasons import fails_by_reason
from engine.state.checkpoint import CHECKPOINT_COMPONENT

__all__ = ["HOP_FIGURES", "Stage", "hop_part", "parse_figures", "stages", "status_line"]

HOP_FIGURES = ("emitted", "acked", "failed", "timeouts", "pending")
"""The counts a stage behind a hop shows (then ``acked/s``)."""

_FIGURE = re.compile(r"([a-z_/]+)=([0-9][0-9,]*(?:\.[0-9]+)?)")
_HOP = re.compile(r"behind hop '([^']*)': ")


@dataclass(frozen=True, slots=True)
class Stage:
    """Spouts whose trees are counted together: the input, or one hop's reader."""

    bolt: str | None
    """The bolt behind the hop, ``None`` for the input."""
    spouts: tuple[str, ...]

    @property
    def label(self) -> str:
        """``input`` or ``behind hop 'BOLT'``."""
        return "input" if self.bolt is None else f"behind hop {self.bolt!r}"


def stages(components: Mapping[str, Mapping[str, Any]],
           input_spouts: Iterable[str] | None = None) -> list[Stage]:
    """The input stage (``input_spouts``, by default every spout that is neither a hop's
    reader nor the checkpoint spout), then one stage per hop, by the bolt it feeds."""
    readers = {reader_id(cid): cid for cid in components}
    hops = {cid: readers[cid] for cid, c in components.items()
            if cid in readers and c.get("kind") == "spout"}
    if input_spouts is None:
        inputs = [cid for cid, c in components.items() if c.get("kind") == "spout"
                  and cid not in hops and cid != CHECKPOINT_COMPONENT]
    else:
        inputs = [cid for cid in input_spouts if cid in components]
    return [Stage(None, tuple(inputs)),
            *(Stage(bolt, (reader,)) for reader, bolt in hops.items())]


def _counts(stats: Mapping[str, Any], stage: Stage) -> dict[str, int]:
    comps = stats["components"]
    reasons = [fails_by_reason(stats, cid) for cid in stage.spouts]
    return {"emitted": sum(comps[cid]["emitted"] for cid in stage.spouts),
            "acked": sum(comps[cid]["acked"] for cid in stage.spouts),
            "failed": sum(r["explicit"] + r["error"] for r in reasons),
            "timeouts": sum(r["timeout"] for r in reasons),
            "pending": sum(comps[cid].get("pending", 0) for cid in stage.spouts)}


def _rate(acked: float, key: str, now: float, last: MutableMapping[str, float]) -> float:
    """Acks per second since the previous line (``last`` keeps each stage's count)."""
    rate = (acked - last.get(key, 0.0)) / max(now - last["t"], 1e-9)
    last[key] = acked
    return rate


def _fig(value: Any, unit: str = "") -> str:
    """A figure for the line: ``-`` when unknown."""
    return "-" if value is None else f"{value}{unit}"


def status_line(name: str, stats: Mapping[str, Any], spout_ids: Iterable[str],
                last: MutableMapping[str, float], now: float) -> str:
    """One status line: totals since the start per stage, ack rates since the previous line
    (``last``: ``{"acked": n, "t": time}`` of it, updated here)."""
    first, *hops = stages(stats["components"], spout_ids)
    c = _counts(stats, first)
    rates = {"acked": _rate(c["acked"], "acked", now, last)}
    for stage in hops:
        key = f"acked:{stage.bolt}"
        rates[key] = _rate(_counts(stats, stage)["acked"], key, now, last)
    last["t"] = now
    errors = sum(comp["errors"] for comp in stats["components"].values())
    lat = stats["complete_latency_ms"]
    records = [m["failed_topic_records"] for tasks in stats.get("metrics", {}).values()
               for m in tasks.values() if isinstance(m.get("failed_topic_records"), int)]
    to_failed_topic = f" failed-topic={sum(records)}" if records else ""
    stuck = ",".join(f"{s['component']}:{s['state']}" for s in stats.get("stalled", ()))
    line = (f"[{name} {stats['uptime_secs']:.0f}s] {'input: ' if hops else ''}"
            f"emitted={c['emitted']} acked={c['acked']} failed={c['failed']} "
            f"timeouts={c['timeouts']}{to_failed_topic} pending={c['pending']} "
            f"errors={errors} acked/s={rates['acked']:,.0f} latency "
            f"p50={_fig(lat['p50'], 'ms')} p99={_fig(lat['p99'], 'ms')}"
            f"{f' stalled={stuck}' if stuck else ''}")
    hop_figures: dict[str, float] = {f"hop:{s.bolt}/{k}": v for s in hops
                                     for k, v in _counts(stats, s).items()}
    hop_figures.update({f"hop:{s.bolt}/acked/s": rates[f"acked:{s.bolt}"] for s in hops})
    return line + hop_part(hop_figures)


def hop_part(figures: Mapping[str, float]) -> str:
    """`` | behind hop 'BOLT': emitted=… acked=… failed=… timeouts=… pending=…
    acked/s=…`` for each hop among ``figures`` (keys ``hop:BOLT/NAME``), else ``""``."""
    bolts = [k[4:-len("/emitted")] for k in figures
             if k.startswith("hop:") and k.endswith("/emitted")]
    parts = []
    for bolt in bolts:
        counts = " ".join(f"{k}={figures.get(f'hop:{bolt}/{k}', 0):.0f}" for k in HOP_FIGURES)
        parts.append(f" | behind hop {bolt!r}: {counts} "
                     f"acked/s={figures.get(f'hop:{bolt}/acked/s', 0):,.0f}")
    return "".join(parts)


def parse_figures(line: str) -> dict[str, float]:
    """A status line's figures: the input's by name (``emitted``, ``acked/s``, …), each
    hop's as ``hop:BOLT/NAME``."""
    first, *rest = line.split(" | ")
    out = {k: float(v.replace(",", "")) for k, v in _FIGURE.findall(first)}
    for part in rest:
        found = _HOP.match(part)
        if found is not None:
            out.update({f"hop:{found.group(1)}/{k}": float(v.replace(",", ""))
                        for k, v in _FIGURE.findall(part[found.end():])})
    return out
