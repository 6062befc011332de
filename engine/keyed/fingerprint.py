"""What a process runs, stated to the other members of its consumer groups.

Processes that share a spout's input through a consumer group must run the same topology:
the same components, each bolt's inputs grouped the same way on the same key fields, the
same declared fields (a repartition hop carries rows of them), the same stateful bolts,
and the same ``topology.workers`` (with 1 a fields grouping stays in process, above 1 it
crosses Kafka). ``fingerprint`` describes that as a JSON-able ``summary`` and a short
``digest`` of it; ``differences`` says, in words, what differs between two summaries.

Above one worker, a spout that carries hops states the layout of the records they write
(``hop_format``; a member without it wrote one row per record, layout 1): a member whose
hop writes records the group's readers would not read is refused like a changed topology.
The summary is of the topology as built, before the hops ``with_hops`` adds (those follow
from it and ``topology.workers``), without task counts (a process may run more or fewer
tasks) and without engine components (ids starting with ``__``) or system streams.
A spout whose class offers ``set_topology_fingerprint`` is handed the fingerprint by the
runtime before ``open`` (``give_fingerprint``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from engine.config import TOPOLOGY_WORKERS
from engine.topology import ComponentDef, Topology

__all__ = ["FingerprintedMember", "TopologyFingerprint", "differences", "fingerprint",
           "give_fingerprint"]

SUMMARY_VERSION = 1
"""Changes when the summary's layout does; summaries of other versions compare as unknown."""


@dataclass(frozen=True, slots=True)
class TopologyFingerprint:
    """A topology as group members compare it: equal digests mean the same summary."""

    digest: str
    summary: Mapping[str, Any]


class FingerprintedMember(Protocol):
    """A component that states the topology's fingerprint where it joins a group."""

    def set_topology_fingerprint(self, fingerprint: TopologyFingerprint) -> None:
        """Called once by the runtime on each task's object, before ``open``."""
        ...


def give_fingerprint(obj: Any, fingerprint: TopologyFingerprint) -> None:
    """Hand ``fingerprint`` to ``obj`` if its class declares ``set_topology_fingerprint``."""
    method = getattr(obj, "set_topology_fingerprint", None)
    if callable(method):
        method(fingerprint)


def fingerprint(topology: Topology, conf: Mapping[str, Any]) -> TopologyFingerprint:
    """The fingerprint of ``topology`` run with ``conf`` (see the module docstring)."""
    workers = int(conf.get(TOPOLOGY_WORKERS, 1) or 1)
    summary = {"v": SUMMARY_VERSION, "workers": workers,
               "components": {d.id: _component(d, workers > 1)
                              for d in topology.components.values() if not _engine_id(d.id)}}
    text = json.dumps(summary, sort_keys=True, separators=(",", ":"))
    return TopologyFingerprint(hashlib.sha256(text.encode()).hexdigest()[:16], summary)


def _engine_id(component: str) -> bool:
    return component.startswith("__")


def _component(d: ComponentDef, hops: bool) -> dict[str, Any]:
    streams = {s: list(sd.fields) for s, sd in d.streams.items() if not s.startswith("$")}
    if d.is_spout:
        layout = getattr(d.obj, "hop_format", None) if hops else None
        return {"kind": "spout", "streams": streams,
                **({"hop": layout} if isinstance(layout, int) else {})}
    inputs = sorted(([s.source, s.stream, s.kind, list(s.fields)] for s in d.inputs
                     if not s.stream.startswith("$") and not _engine_id(s.source)),
                    key=lambda i: (i[0], i[1]))
    return {"kind": "bolt", "streams": streams, "inputs": inputs,
            "stateful": callable(getattr(d.obj, "keyed", None))}


def differences(here: Mapping[str, Any], group: Mapping[str, Any],
                this: str = "here") -> list[str]:
    """What differs between the summary ``here`` (named ``this`` in the phrases) and the
    group's, one phrase each, most telling first; empty when nothing can be named (a
    summary of another version or layout)."""
    try:
        if here.get("v") != SUMMARY_VERSION or group.get("v") != SUMMARY_VERSION:
            return []
        found = []
        if here["workers"] != group["workers"]:
            found.append(f"topology.workers={here['workers']} {this}, "
                         f"{group['workers']} in the group")
        mine, theirs = here["components"], group["components"]
        only_here = sorted(set(mine) - set(theirs))
        only_group = sorted(set(theirs) - set(mine))
        if only_here or only_group:
            found.append("components differ: " + ", ".join(
                [f"{c!r} only {this}" for c in only_here]
                + [f"{c!r} only in the group" for c in only_group]))
        for cid in sorted(set(mine) & set(theirs)):
            found += _component_differences(cid, mine[cid], theirs[cid], this)
        return found
    except (KeyError, TypeError, AttributeError, ValueError):
        return []


def _component_differences(cid: str, here: Mapping[str, Any], group: Mapping[str, Any],
                           this: str) -> list[str]:
    if here["kind"] != group["kind"]:
        return [f"{cid!r}: a {here['kind']} {this}, a {group['kind']} in the group"]
    found = []
    name = f"{here['kind']} {cid!r}"
    if here.get("hop") != group.get("hop"):
        found.append(f"{name}: its hops write records of layout {here.get('hop') or 1} "
                     f"{this}, {group.get('hop') or 1} in the group (every member must run "
                     f"the same stormloop version)")
    if here.get("stateful") != group.get("stateful"):
        found.append(f"{name}: {_stateful(here)} {this}, {_stateful(group)} in the group")
    found += _input_differences(name, here.get("inputs", []), group.get("inputs", []), this)
    for stream in sorted(set(here["streams"]) | set(group["streams"])):
        mine, theirs = here["streams"].get(stream), group["streams"].get(stream)
        if mine is None or theirs is None:
            found.append(f"{name}: stream {stream!r} declared only "
                         f"{this if theirs is None else 'in the group'}")
        elif mine != theirs:
            found.append(f"{name}: stream {stream!r} of fields {mine} {this}, {theirs} in "
                         f"the group")
    return found


def _input_differences(name: str, here: list[Any], group: list[Any], this: str) -> list[str]:
    mine = {_source(src, stream): (kind, fields) for src, stream, kind, fields in here}
    theirs = {_source(src, stream): (kind, fields) for src, stream, kind, fields in group}
    found = []
    only_here = [s for s in sorted(mine) if s not in theirs]
    only_group = [s for s in sorted(theirs) if s not in mine]
    if only_here or only_group:
        found.append(f"{name}: reads {', '.join(only_here) or 'nothing else'} {this}, "
                     f"{', '.join(only_group) or 'nothing else'} in the group")
    for source in sorted(set(mine) & set(theirs)):
        a, b = mine[source], theirs[source]
        if a[0] == b[0] == "fields" and a[1] != b[1]:
            found.append(f"{name}: fields grouping on {a[1]} {this}, {b[1]} in the group")
        elif a != b:
            found.append(f"{name}: {_grouping(a)} from {source} {this}, {_grouping(b)} in "
                         f"the group")
    return found


def _source(component: str, stream: str) -> str:
    return repr(component) if stream == "default" else f"{component!r} stream {stream!r}"


def _grouping(edge: tuple[str, list[str]]) -> str:
    kind, fields = edge
    return f"fields grouping on {fields}" if kind == "fields" else f"{kind} grouping"


def _stateful(component: Mapping[str, Any]) -> str:
    return "stateful" if component.get("stateful") else "not stateful"
