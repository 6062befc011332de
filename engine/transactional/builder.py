"""``TransactionalTopologyBuilder``: a transactional topology as a plain engine topology.

What it builds (Storm's ``TransactionalTopologyBuilder``), for spout id ``S``:

- ``S/coordinator``: ``CoordinatorSpout``, one task;
- ``S``: ``EmitterBolt`` with the given parallelism, all-grouped on the coordinator's batch
  stream;
- each user bolt: a ``CoordinatedBolt`` with the user's groupings, plus a direct grouping on
  the coordination stream of each of its sources and, for a committer, an all grouping on
  the coordinator's commit stream.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from engine.components import BasicBolt
from engine.errors import TopologyError
from engine.topology import DEFAULT_STREAM, BoltDeclarer, Topology, TopologyBuilder
from engine.transactional.committer import BatchBolt, Committer
from engine.transactional.coordinated import (
    BATCH_STREAM,
    COMMIT_STREAM,
    COORD_STREAM,
    BoltPlan,
    CoordinatedBolt,
)
from engine.transactional.coordinator import CoordinatorSpout
from engine.transactional.emitter import EmitterBolt
from engine.transactional.partitioned import as_transactional_spout
from engine.tuples import Fields

__all__ = ["TransactionalBoltDeclarer", "TransactionalTopologyBuilder"]

_GROUPINGS = ("shuffle_grouping", "fields_grouping", "all_grouping", "global_grouping",
              "none_grouping", "direct_grouping", "local_or_shuffle_grouping",
              "partial_key_grouping", "custom_grouping")


class TransactionalBoltDeclarer:
    """Records groupings and configuration, replayed on the engine's declarer at build time.

    The same methods as the engine's ``BoltDeclarer``; each returns ``self`` for chaining.
    """

    def __init__(self, component_id: str) -> None:
        self.component_id = component_id
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def sources(self) -> set[str]:
        """Component ids this bolt subscribes to."""
        return {args[0] for name, args in self.calls if name in _GROUPINGS}

    def apply(self, declarer: BoltDeclarer) -> None:
        """Replay the recorded calls on the engine's declarer."""
        for name, args in self.calls:
            getattr(declarer, name)(*args)

    def _record(self, name: str, *args: Any) -> TransactionalBoltDeclarer:
        self.calls.append((name, args))
        return self

    def shuffle_grouping(self, source: str, stream: str = DEFAULT_STREAM
                         ) -> TransactionalBoltDeclarer:
        """Spread tuples evenly over the bolt's tasks."""
        return self._record("shuffle_grouping", source, stream)

    def fields_grouping(self, source: str, fields: Iterable[str] | Fields,
                        stream: str = DEFAULT_STREAM) -> TransactionalBoltDeclarer:
        """Equal values of ``fields`` always go to the same task."""
        return self._record("fields_grouping", source, fields, stream)

    def all_grouping(self, source: str, stream: str = DEFAULT_STREAM
                     ) -> TransactionalBoltDeclarer:
        """Every task gets a copy of every tuple."""
        return self._record("all_grouping", source, stream)

    def global_grouping(self, source: str, stream: str = DEFAULT_STREAM
                        ) -> TransactionalBoltDeclarer:
        """Every tuple goes to the task with the lowest id."""
        return self._record("global_grouping", source, stream)

    def none_grouping(self, source: str, stream: str = DEFAULT_STREAM
                      ) -> TransactionalBoltDeclarer:
        """No preference: behaves as shuffle."""
        return self._record("none_grouping", source, stream)

    def direct_grouping(self, source: str, stream: str = DEFAULT_STREAM
                        ) -> TransactionalBoltDeclarer:
        """The emitter picks the task with ``emit_direct``; the stream must be direct."""
        return self._record("direct_grouping", source, stream)

    def local_or_shuffle_grouping(self, source: str, stream: str = DEFAULT_STREAM
                                  ) -> TransactionalBoltDeclarer:
        """Shuffle among the tasks in this process (all of them)."""
        return self._record("local_or_shuffle_grouping", source, stream)

    def partial_key_grouping(self, source: str, fields: Iterable[str] | Fields,
                             stream: str = DEFAULT_STREAM) -> TransactionalBoltDeclarer:
        """Each key goes to the less loaded of two candidate tasks."""
        return self._record("partial_key_grouping", source, fields, stream)

    def custom_grouping(self, source: str, grouping: Any, stream: str = DEFAULT_STREAM
                        ) -> TransactionalBoltDeclarer:
        """``grouping.prepare(context, stream, targets)``, then ``choose_tasks(task, values)``."""
        return self._record("custom_grouping", source, grouping, stream)

    def add_configuration(self, key: str, value: Any) -> TransactionalBoltDeclarer:
        """Configuration for this component only, over the topology's."""
        return self._record("add_configuration", key, value)

    def add_configurations(self, conf: dict[str, Any]) -> TransactionalBoltDeclarer:
        """Several ``add_configuration`` calls at once."""
        return self._record("add_configurations", conf)

    def set_num_tasks(self, num_tasks: int) -> TransactionalBoltDeclarer:
        """Run ``num_tasks`` task instances over the component's executors."""
        return self._record("set_num_tasks", num_tasks)


class TransactionalTopologyBuilder:
    """Declares a transactional topology; ``build_topology`` returns an engine ``Topology``.

    ``transactional_id`` keys the persisted state: a topology restarted with the same id and
    ``transactional.state.dir`` resumes at the first transaction not committed.
    """

    def __init__(self, transactional_id: str, spout_id: str, spout: Any,
                 parallelism: int = 1, *, num_tasks: int | None = None) -> None:
        if not isinstance(transactional_id, str) or not transactional_id:
            raise TopologyError(f"transactional topology: transactional_id must be a "
                                f"non-empty string, got {transactional_id!r}")
        try:
            self._spout = as_transactional_spout(spout)
        except TypeError as exc:
            raise TopologyError(f"spout {spout_id!r}: {exc}") from None
        self.transactional_id = transactional_id
        self.spout_id = spout_id
        self._spout_parallelism = parallelism
        self._spout_tasks = num_tasks
        self._bolts: dict[str, tuple[Any, int, int | None, bool, TransactionalBoltDeclarer]] = {}

    @property
    def coordinator_id(self) -> str:
        """The component id of the coordinator spout."""
        return f"{self.spout_id}/coordinator"

    def set_bolt(self, component_id: str, bolt: BatchBolt | BasicBolt, parallelism: int = 1,
                 *, num_tasks: int | None = None) -> TransactionalBoltDeclarer:
        """Add a batch bolt (a committer if its class derives from ``Committer``)."""
        return self._add(component_id, bolt, parallelism, num_tasks, committer=False)

    def set_committer_bolt(self, component_id: str, bolt: BatchBolt, parallelism: int = 1,
                           *, num_tasks: int | None = None) -> TransactionalBoltDeclarer:
        """Add a batch bolt whose ``finish_batch`` runs in the commit phase, in txid order."""
        return self._add(component_id, bolt, parallelism, num_tasks, committer=True)

    def _add(self, cid: str, bolt: Any, parallelism: int, num_tasks: int | None,
             committer: bool) -> TransactionalBoltDeclarer:
        if not isinstance(bolt, BatchBolt | BasicBolt):
            raise TopologyError(f"bolt {cid!r}: a transactional topology takes BatchBolt or "
                                f"BasicBolt instances, got {type(bolt).__name__}")
        if cid in self._bolts or cid in (self.spout_id, self.coordinator_id):
            raise TopologyError(f"bolt {cid!r}: duplicate component id")
        if committer and not isinstance(bolt, BatchBolt):
            raise TopologyError(f"bolt {cid!r}: a committer must be a BatchBolt, "
                                f"got {type(bolt).__name__}")
        declarer = TransactionalBoltDeclarer(cid)
        is_committer = committer or isinstance(bolt, Committer)
        self._bolts[cid] = (bolt, parallelism, num_tasks, is_committer, declarer)
        return declarer

    def build_topology(self) -> Topology:
        """The engine topology; raises ``TopologyError`` naming the component at fault."""
        phases = self._commit_phases()
        builder = TopologyBuilder()
        builder.set_spout(self.coordinator_id,
                          CoordinatorSpout(self._spout, self.transactional_id), 1)
        builder.set_bolt(self.spout_id,
                         EmitterBolt(self._spout, self.transactional_id,
                                     self._downstream(self.spout_id)),
                         self._spout_parallelism, num_tasks=self._spout_tasks,
                         ).all_grouping(self.coordinator_id, BATCH_STREAM)
        for cid, (bolt, parallelism, num_tasks, committer, declarer) in self._bolts.items():
            sources = sorted(declarer.sources())
            plan = BoltPlan({s: phases.get(s, False) for s in sources},
                            self._downstream(cid), committer, phases[cid])
            engine_declarer = builder.set_bolt(
                cid, CoordinatedBolt(bolt, plan, self.coordinator_id), parallelism,
                num_tasks=num_tasks)
            declarer.apply(engine_declarer)
            for source in sources:
                engine_declarer.direct_grouping(source, COORD_STREAM)
            if committer:
                engine_declarer.all_grouping(self.coordinator_id, COMMIT_STREAM)
        return builder.create_topology()

    def _downstream(self, cid: str) -> tuple[str, ...]:
        return tuple(b for b, entry in self._bolts.items() if cid in entry[4].sources())

    def _commit_phases(self) -> dict[str, bool]:
        """Bolt id -> finishes in the commit phase (a committer, or a source does)."""
        phases: dict[str, bool] = {self.spout_id: False}
        visiting: set[str] = set()

        def phase(cid: str) -> bool:
            if cid in phases:
                return phases[cid]
            entry = self._bolts.get(cid)
            if entry is None:
                known = sorted([self.spout_id, *self._bolts])
                raise TopologyError(f"transactional topology {self.transactional_id!r}: "
                                    f"unknown source component {cid!r}; components are {known}")
            if cid in visiting:
                raise TopologyError(f"bolt {cid!r}: transactional topologies must be acyclic; "
                                    f"{cid!r} is its own upstream")
            visiting.add(cid)
            _, _, _, committer, declarer = entry
            result = any([phase(s) for s in sorted(declarer.sources())]) or committer
            visiting.discard(cid)
            phases[cid] = result
            return result

        for cid, entry in self._bolts.items():
            if not entry[4].sources():
                raise TopologyError(f"bolt {cid!r}: has no input; subscribe it with a "
                                    f"grouping, e.g. .shuffle_grouping({self.spout_id!r})")
            phase(cid)
        return phases
