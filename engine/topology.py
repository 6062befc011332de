"""Topology definition: ``TopologyBuilder`` → validated, immutable ``Topology``.

``create_topology`` raises ``TopologyError`` with one line naming the component and the
problem; a ``Topology`` that exists is wired correctly (every source, stream and field a
grouping names is declared).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Self

from engine.components import BasicBolt, Bolt, Component, Spout
from engine.declarer import DEFAULT_STREAM, OutputFieldsDeclarer, StreamDef
from engine.errors import TopologyError
from engine.tuples import Fields

__all__ = [
    "BoltDeclarer",
    "ComponentDef",
    "ComponentDraft",
    "OutputFieldsDeclarer",
    "StreamDef",
    "Subscription",
    "Topology",
    "TopologyBuilder",
    "register_transform",
]

# Spout task ids are packed into 12 bits of the acker's per-tree record (engine/acker.py).
MAX_SPOUT_TASKS = 4095


@dataclass(frozen=True, slots=True)
class Subscription:
    """One input of a bolt: ``source`` component, ``stream``, and how tuples are grouped."""

    source: str
    stream: str
    kind: str
    fields: tuple[str, ...] = ()
    custom: Any = None


@dataclass(slots=True)
class ComponentDraft:
    """A component while it is being declared (what a declarer changes)."""

    id: str
    obj: Component
    is_spout: bool
    parallelism: int
    num_tasks: int
    conf: dict[str, Any] = field(default_factory=dict)
    inputs: list[Subscription] = field(default_factory=list)
    num_tasks_set: bool = False

    @property
    def kind(self) -> str:
        """``"spout"`` or ``"bolt"``, as error messages name it."""
        return "spout" if self.is_spout else "bolt"


@dataclass(frozen=True, slots=True)
class ComponentDef:
    """A spout or bolt of a created topology: frozen, with read-only conf and streams."""

    id: str
    obj: Component
    is_spout: bool
    parallelism: int
    num_tasks: int
    conf: Mapping[str, Any]
    inputs: tuple[Subscription, ...]
    streams: Mapping[str, StreamDef]

    @property
    def kind(self) -> str:
        """``"spout"`` or ``"bolt"``, as error messages name it."""
        return "spout" if self.is_spout else "bolt"


@dataclass(frozen=True)
class Topology:
    """A validated topology: components in declaration order, spouts first; read-only."""

    components: Mapping[str, ComponentDef]

    def spouts(self) -> list[ComponentDef]:
        """The spout definitions."""
        return [c for c in self.components.values() if c.is_spout]

    def bolts(self) -> list[ComponentDef]:
        """The bolt definitions."""
        return [c for c in self.components.values() if not c.is_spout]


class BoltDeclarer:
    """Returned by ``set_bolt``/``set_spout``: chain groupings and configuration on it."""

    def __init__(self, definition: ComponentDraft) -> None:
        self._def = definition

    def _add(self, source: str, stream: str, kind: str, fields: Iterable[str] = (),
             custom: Any = None) -> Self:
        if isinstance(fields, str):
            fields = [fields]
        self._def.inputs.append(Subscription(source, stream, kind, tuple(fields), custom))
        return self

    def shuffle_grouping(self, source: str, stream: str = DEFAULT_STREAM) -> Self:
        """Spread tuples evenly over the bolt's tasks."""
        return self._add(source, stream, "shuffle")

    def fields_grouping(self, source: str, fields: Iterable[str] | Fields,
                        stream: str = DEFAULT_STREAM) -> Self:
        """Equal values of ``fields`` always go to the same task (stable across runs)."""
        return self._add(source, stream, "fields", fields)

    def all_grouping(self, source: str, stream: str = DEFAULT_STREAM) -> Self:
        """Every task gets a copy of every tuple."""
        return self._add(source, stream, "all")

    def global_grouping(self, source: str, stream: str = DEFAULT_STREAM) -> Self:
        """Every tuple goes to the task with the lowest id."""
        return self._add(source, stream, "global")

    def none_grouping(self, source: str, stream: str = DEFAULT_STREAM) -> Self:
        """No preference: behaves as shuffle."""
        return self._add(source, stream, "none")

    def direct_grouping(self, source: str, stream: str = DEFAULT_STREAM) -> Self:
        """The emitter picks the task with ``emit_direct``; the stream must be direct."""
        return self._add(source, stream, "direct")

    def local_or_shuffle_grouping(self, source: str,
                                  stream: str = DEFAULT_STREAM) -> Self:
        """Shuffle among tasks in the same process: all of them, in this engine."""
        return self._add(source, stream, "local_or_shuffle")

    def partial_key_grouping(self, source: str, fields: Iterable[str] | Fields,
                             stream: str = DEFAULT_STREAM) -> Self:
        """Each key goes to the less loaded of two candidate tasks (key splitting)."""
        return self._add(source, stream, "partial_key", fields)

    def custom_grouping(self, source: str, grouping: Any,
                        stream: str = DEFAULT_STREAM) -> Self:
        """``grouping.prepare(context, stream, targets)``, then ``choose_tasks(task, values)``."""
        return self._add(source, stream, "custom", custom=grouping)

    def add_configuration(self, key: str, value: Any) -> Self:
        """Configuration for this component only, over the topology's."""
        self._def.conf[key] = value
        return self

    def add_configurations(self, conf: dict[str, Any]) -> Self:
        """Several ``add_configuration`` calls at once."""
        self._def.conf.update(conf)
        return self

    def set_num_tasks(self, num_tasks: int) -> Self:
        """Run ``num_tasks`` task instances over the component's executors."""
        self._def.num_tasks = num_tasks
        self._def.num_tasks_set = True
        return self

    def copy_to(self, other: BoltDeclarer) -> None:
        """Add this declarer's groupings, configuration and task count (if set) to ``other``."""
        other._def.inputs.extend(self._def.inputs)
        other._def.conf.update(self._def.conf)
        if self._def.num_tasks_set:
            other.set_num_tasks(self._def.num_tasks)

    def sources(self) -> set[str]:
        """The component ids this bolt subscribes to so far."""
        return {sub.source for sub in self._def.inputs}


SpoutDeclarer = BoltDeclarer


class TopologyBuilder:
    """Declares spouts and bolts; ``create_topology`` validates and freezes the result."""

    def __init__(self) -> None:
        self._defs: list[ComponentDraft] = []

    def set_spout(self, component_id: str, spout: Spout, parallelism: int = 1, *,
                  num_tasks: int | None = None) -> BoltDeclarer:
        """Add a spout run by ``parallelism`` executors over ``num_tasks`` tasks."""
        return self._set(component_id, spout, True, parallelism, num_tasks)

    def set_bolt(self, component_id: str, bolt: Bolt | BasicBolt, parallelism: int = 1, *,
                 num_tasks: int | None = None) -> BoltDeclarer:
        """Add a bolt; subscribe it with the groupings of the returned declarer."""
        return self._set(component_id, bolt, False, parallelism, num_tasks)

    def _set(self, cid: str, obj: Component, is_spout: bool, parallelism: int,
             num_tasks: int | None) -> BoltDeclarer:
        definition = ComponentDraft(cid, obj, is_spout, parallelism,
                            parallelism if num_tasks is None else num_tasks)
        self._defs.append(definition)
        return BoltDeclarer(definition)

    def create_topology(self) -> Topology:
        """A validated ``Topology``; raises ``TopologyError`` naming the component and problem."""
        components: dict[str, ComponentDef] = {}
        for draft in sorted(_with_executors(self._defs), key=lambda d: not d.is_spout):
            streams = _check_component(draft, components)
            # Copies: a declarer used after this call changes its draft, never the topology.
            components[draft.id] = ComponentDef(
                draft.id, draft.obj, draft.is_spout, draft.parallelism, draft.num_tasks,
                MappingProxyType(dict(draft.conf)), tuple(draft.inputs),
                MappingProxyType(streams))
        for d in components.values():
            for sub in d.inputs:
                _check_subscription(d, sub, components)
        spout_tasks = sum(d.num_tasks for d in components.values() if d.is_spout)
        if spout_tasks > MAX_SPOUT_TASKS:
            raise TopologyError(
                f"topology: {spout_tasks} spout tasks; at most {MAX_SPOUT_TASKS} are supported")
        return Topology(MappingProxyType(components))


DraftTransform = Callable[[list[ComponentDraft]], list[ComponentDraft]]
# What create_topology does to the drafts before checking them, by rank: packages that
# build on this module register theirs when imported (windowed bolts into their executors,
# rank 10; checkpointing wired in when a bolt is stateful, rank 20), so a plain topology
# imports neither and this module imports nothing above it.
_TRANSFORMS: dict[str, tuple[int, DraftTransform]] = {}


def register_transform(name: str, rank: int, transform: DraftTransform) -> None:
    """Have ``create_topology`` apply ``transform`` to the drafts (lower ``rank`` first);
    registering ``name`` again replaces it."""
    _TRANSFORMS[name] = (rank, transform)


def _with_executors(defs: list[ComponentDraft]) -> list[ComponentDraft]:
    """The definitions after every registered transform; the builder's own definitions
    stay as declared."""
    for _, transform in sorted(_TRANSFORMS.values(), key=lambda entry: entry[0]):
        defs = transform(defs)
    return defs


def _check_component(d: ComponentDraft, seen: dict[str, ComponentDef]) -> dict[str, StreamDef]:
    """Check ``d`` against the components ``seen`` so far; returns its declared streams."""
    name = f"{d.kind} {d.id!r}"
    if not isinstance(d.id, str) or not d.id:
        raise TopologyError(f"{d.kind} {d.id!r}: component id must be a non-empty string")
    if d.id in seen:
        raise TopologyError(f"{name}: duplicate component id; it is already a {seen[d.id].kind}")
    if d.id.startswith("__"):
        raise TopologyError(f"{name}: ids starting with '__' are reserved for the engine")
    expected = (Spout,) if d.is_spout else (Bolt, BasicBolt)
    if not isinstance(d.obj, expected):
        valid = " or ".join(t.__name__ for t in expected)
        raise TopologyError(f"{name}: expected an instance of {valid}, "
                            f"got {type(d.obj).__name__}")
    for what, value in (("parallelism", d.parallelism), ("num_tasks", d.num_tasks)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise TopologyError(f"{name}: {what} must be an int >= 1, got {value!r}")
    if d.is_spout and d.inputs:
        raise TopologyError(f"{name}: a spout cannot subscribe to other components")
    if not d.is_spout and not d.inputs:
        raise TopologyError(f"{name}: has no input; subscribe it with a grouping, "
                            f"e.g. .shuffle_grouping('<source>')")
    declarer = OutputFieldsDeclarer()
    try:
        d.obj.declare_output_fields(declarer)
    except Exception as exc:
        raise TopologyError(f"{name}: declare_output_fields raised {type(exc).__name__}: "
                            f"{exc}") from exc
    return declarer.streams


def _check_subscription(d: ComponentDef, sub: Subscription,
                        components: dict[str, ComponentDef]) -> None:
    name = f"{d.kind} {d.id!r}"
    grouping = f"{sub.kind}_grouping"
    source = components.get(sub.source)
    if source is None:
        raise TopologyError(f"{name}: {grouping} on unknown component {sub.source!r}; "
                            f"components are {sorted(components)}")
    stream = source.streams.get(sub.stream)
    if stream is None:
        raise TopologyError(f"{name}: {grouping} on {sub.source!r} stream {sub.stream!r}, "
                            f"which it does not declare; it declares {sorted(source.streams)}")
    if sub.kind in ("fields", "partial_key"):
        if not sub.fields:
            raise TopologyError(f"{name}: {grouping} on {sub.source!r} names no fields")
        for f in sub.fields:
            if f not in stream.fields:
                raise TopologyError(
                    f"{name}: {grouping} on {sub.source!r} uses field {f!r}; {sub.source!r} "
                    f"declares {list(stream.fields)} on stream {sub.stream!r}")
    if sub.kind == "direct" and not stream.direct:
        raise TopologyError(f"{name}: direct_grouping on {sub.source!r} stream {sub.stream!r}, "
                            f"which is not declared with direct=True")
    if sub.kind != "direct" and stream.direct:
        raise TopologyError(f"{name}: {grouping} on {sub.source!r} stream {sub.stream!r}, "
                            f"which is a direct stream; use direct_grouping")
    if sub.kind == "custom" and not (hasattr(sub.custom, "choose_tasks")
                                     and hasattr(sub.custom, "prepare")):
        raise TopologyError(f"{name}: custom_grouping on {sub.source!r} needs an object with "
                            f"prepare() and choose_tasks(), got {type(sub.custom).__name__}")
