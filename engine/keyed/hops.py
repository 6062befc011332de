"""Fields groupings across processes: the frozen topology rewritten at submit time.

With ``topology.workers`` above 1, every process runs every component on its own share of
a shared spout's input, so a fields grouping inside one process would see only part of a
key's tuples. Each such grouping (a ``fields_grouping`` whose source is downstream of a
spout with ``shared_across_processes = True`` that offers a ``repartition_hop``) becomes a
hop through the spout's own system: the edge ``source -> bolt`` is replaced by

- a writer bolt ``__<bolt>-repartition-writer`` subscribed to ``source`` (local or shuffle),
  which sends each tuple keyed by the grouping fields to the repartition topic, and acks it
  once the broker confirmed it;
- a reader spout ``__<bolt>-repartition`` (the same parallelism as the shared spout), which
  reads that topic in the spout's group and emits the tuples on its default stream;
- the bolt's fields grouping, now on the reader spout, in process as before.

Executors, collectors and groupings are untouched: the hop is made of ordinary components.
A stateful bolt behind a hop runs in the executor that keeps its state per input partition
(the one its ``keyed`` gives), as one task per process; where that executor names a
``message_id_field`` (a stateful windowed bolt), the reader spout puts each record's offset
in that field of the tuples it emits (``with_offsets_in``).
A fields grouping on the same fields downstream of a bolt keyed that way stays in process:
the engine takes a field of the same name to carry the same value (a bolt that changes a
key field's value under the same name must group on a field of another name).
With ``topology.workers`` at 1 nothing is rewritten; shared spouts that feed a fields
grouping are told so (``keyed_downstream``), so that a member that is not alone can say its
keyed results are split.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Protocol

from engine.components import Bolt, Spout
from engine.config import TOPOLOGY_WORKERS
from engine.declarer import DEFAULT_STREAM, OutputFieldsDeclarer
from engine.errors import TopologyError
from engine.topology import ComponentDef, Subscription, Topology

__all__ = ["KeyedSource", "hop_sources", "reader_id", "with_hops", "writer_id"]


class KeyedSource(Protocol):
    """A shared spout that can carry a fields grouping across processes."""

    def repartition_hop(self, receiver: str, key_fields: tuple[str, ...],
                        fields: tuple[str, ...]) -> tuple[Bolt, Spout]:
        """A writer bolt and a reader spout for the grouping into bolt ``receiver``:
        tuples of ``fields``, keyed by ``key_fields``."""
        ...


def writer_id(receiver: str) -> str:
    """The id of the bolt that writes ``receiver``'s repartition topic."""
    return f"__{receiver}-repartition-writer"


def reader_id(receiver: str) -> str:
    """The id of the spout that reads ``receiver``'s repartition topic."""
    return f"__{receiver}-repartition"


def hop_sources(topology: Topology) -> dict[str, str]:
    """For each reader spout of a hop in ``topology`` (as ``with_hops`` rewrote it), the
    component whose tuples it carries: the one its writer bolt reads."""
    components = topology.components
    return {reader_id(cid): components[writer_id(cid)].inputs[0].source
            for cid in components
            if reader_id(cid) in components and writer_id(cid) in components}


def with_hops(topology: Topology, conf: Mapping[str, Any]) -> Topology:
    """``topology`` with a repartition hop for each fields grouping that would cross
    processes (``topology.workers`` > 1), or with its keyed shared spouts marked (1)."""
    origins = _origins(topology)
    edges = [(b, sub) for b in topology.bolts() for sub in b.inputs
             if sub.kind == "fields" and origins.get(sub.source) is not None]
    if conf.get(TOPOLOGY_WORKERS, 1) <= 1:
        return _marked(topology, {origins[sub.source] for _, sub in edges}) if edges else (
            topology)
    out = _rewritten(topology, origins) if edges else topology
    _check_state(out)
    return out


def _is_keyed_source(obj: Any) -> bool:
    return bool(getattr(obj, "shared_across_processes", False)) and callable(
        getattr(obj, "repartition_hop", None))


def _origins(topology: Topology) -> dict[str, str | None]:
    """For each component, the first shared keyed spout upstream of it (itself for one)."""
    origin: dict[str, str | None] = {
        d.id: d.id if d.is_spout and _is_keyed_source(d.obj) else None
        for d in topology.components.values()}
    changed = True
    while changed:
        changed = False
        for d in topology.bolts():
            if origin[d.id] is None:
                found = next((origin[s.source] for s in d.inputs if origin[s.source]), None)
                if found is not None:
                    origin[d.id], changed = found, True
    return origin


def _marked(topology: Topology, spouts: set[str | None]) -> Topology:
    """``topology`` with each of ``spouts`` told that a fields grouping is downstream."""
    components = dict(topology.components)
    for cid in spouts:
        d = components[str(cid)]
        if hasattr(type(d.obj), "keyed_downstream"):
            obj = copy.copy(d.obj)
            obj.keyed_downstream = True  # type: ignore[attr-defined]
            components[d.id] = _replace(d, obj=obj)
    return Topology(MappingProxyType(components))


def _rewritten(topology: Topology, origins: Mapping[str, str | None]) -> Topology:
    """Spouts, reader spouts, bolts (inputs redirected), writer bolts, in that order."""
    keyed = _keyed_by(topology, origins)
    spouts, readers, bolts, writers = {}, {}, {}, {}
    for d in topology.components.values():
        if d.is_spout:
            spouts[d.id] = d
            continue
        crossing = [s for s in d.inputs if _crosses(s, origins, keyed)]
        if len(crossing) > 1:
            raise TopologyError(
                f"bolt {d.id!r}: fields groupings from {len(crossing)} sources would cross "
                f"processes through one topic; with topology.workers > 1 give each its own bolt")
        if not crossing:
            bolts[d.id] = d
            continue
        sub = crossing[0]
        reader, writer = _hop(topology, d, sub, topology.components[str(origins[sub.source])])
        inputs = tuple(Subscription(reader.id, DEFAULT_STREAM, "fields", sub.fields)
                       if s is sub else s for s in d.inputs)
        bolts[d.id], reader = _partitioned(_replace(d, inputs=inputs), reader, sub)
        readers[reader.id], writers[writer.id] = reader, writer
    return Topology(MappingProxyType({**spouts, **readers, **bolts, **writers}))


def _partitioned(bolt: ComponentDef, reader: ComponentDef,
                 sub: Subscription) -> tuple[ComponentDef, ComponentDef]:
    """``bolt`` with its state kept per partition of ``reader`` if it has state (its
    executor offers ``keyed``; the reader, ``changelog_input``), in one task per process:
    a partition's state is one map, and a process's tasks share its one core anyway. Where
    the new executor names a ``message_id_field``, the reader fills it (``_message_ids``)."""
    keyed = getattr(bolt.obj, "keyed", None)
    if not callable(keyed):
        return bolt, reader
    source = getattr(reader.obj, "changelog_input", None)
    obj = keyed(source(bolt.id, tuple(sub.fields))) if callable(source) else None
    if obj is None:
        return bolt, reader
    field = getattr(obj, "message_id_field", None)
    if field is not None:
        reader = _message_ids(bolt, reader, field)
    return _replace(bolt, obj=obj, parallelism=1, num_tasks=1), reader


def _message_ids(bolt: ComponentDef, reader: ComponentDef, field: str) -> ComponentDef:
    """``reader`` putting each record's offset in ``field`` of its tuples: the message ids
    of a stateful windowed ``bolt``, which grow per input partition. Refused where the
    bolt reads anything else, the field is not among the tuples', or the reader cannot."""
    others = [s.source for s in bolt.inputs
              if s.source != reader.id and not s.stream.startswith("$")]
    offsets = getattr(reader.obj, "with_offsets_in", None)
    fields = list(reader.streams[DEFAULT_STREAM].fields)
    why = (f"it also reads {others}" if others
           else f"its message id field {field!r} is not one of {fields}" if field not in fields
           else f"{reader.id!r} cannot give record offsets" if not callable(offsets) else None)
    if why is not None:
        raise TopologyError(
            f"bolt {bolt.id!r}: with topology.workers > 1 a stateful windowed bolt reads "
            f"only through its fields grouping, with record offsets as message ids, and "
            f"{why}; run it with topology.workers=1")
    assert callable(offsets)
    return _replace(reader, obj=offsets(field))


def _check_state(topology: Topology) -> None:
    """Refuse a stateful bolt whose state would not follow its input's partitions."""
    for d in topology.bolts():
        if callable(getattr(d.obj, "keyed", None)) and not getattr(d.obj, "partitioned", False):
            raise TopologyError(
                f"bolt {d.id!r}: with topology.workers > 1 a stateful bolt keeps its state "
                f"per input partition, so it must read through a fields grouping from a "
                f"spout that shares its input across processes; run it with "
                f"topology.workers=1")


def _crosses(sub: Subscription, origins: Mapping[str, str | None],
             keyed: Mapping[str, frozenset[str]]) -> bool:
    return (sub.kind == "fields" and origins.get(sub.source) is not None
            and keyed.get(sub.source) != frozenset(sub.fields))


def _keyed_by(topology: Topology, origins: Mapping[str, str | None]) -> dict[str, frozenset[str]]:
    """Bolts whose every input is a fields grouping on the same fields that is (or follows)
    a hop: tuples of one key value reach one process, so a grouping on those fields from
    them needs no hop."""
    keyed: dict[str, frozenset[str]] = {}
    changed = True
    while changed:
        changed = False
        for d in topology.bolts():
            # System streams ("$checkpoint", all-grouped) carry no keyed tuples.
            kinds = {frozenset(s.fields) if s.kind == "fields" else None for s in d.inputs
                     if not s.stream.startswith("$")}
            fields = kinds.pop() if len(kinds) == 1 else None
            if d.id in keyed or fields is None:
                continue
            if all(origins.get(s.source) is None or keyed.get(s.source) in (None, fields)
                   for s in d.inputs if not s.stream.startswith("$")):
                keyed[d.id], changed = fields, True
    return keyed


def _hop(topology: Topology, bolt: ComponentDef, sub: Subscription,
         spout: ComponentDef) -> tuple[ComponentDef, ComponentDef]:
    """The reader spout and writer bolt carrying ``sub`` into ``bolt`` across processes."""
    fields = tuple(topology.components[sub.source].streams[sub.stream].fields)
    source: KeyedSource = spout.obj  # type: ignore[assignment]
    writer, reader = source.repartition_hop(bolt.id, tuple(sub.fields), fields)
    reader_def = ComponentDef(reader_id(bolt.id), reader, True, spout.parallelism,
                              spout.num_tasks, spout.conf, (), _streams(reader))
    feed = Subscription(sub.source, sub.stream, "local_or_shuffle")
    writer_def = ComponentDef(writer_id(bolt.id), writer, False, 1, 1,
                              MappingProxyType({}), (feed,), _streams(writer))
    return reader_def, writer_def


def _streams(obj: Any) -> Mapping[str, Any]:
    declarer = OutputFieldsDeclarer()
    obj.declare_output_fields(declarer)
    return MappingProxyType(declarer.streams)


def _replace(d: ComponentDef, **changes: Any) -> ComponentDef:
    values = {name: getattr(d, name) for name in ComponentDef.__dataclass_fields__}
    values.update(changes)
    return ComponentDef(**values)
