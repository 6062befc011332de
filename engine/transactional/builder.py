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

from typing import Any

from engine.components import BasicBolt, Component
from engine.errors import TopologyError
from engine.topology import BoltDeclarer, ComponentDraft, Topology, TopologyBuilder
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

__all__ = ["TransactionalBoltDeclarer", "TransactionalTopologyBuilder"]


class TransactionalBoltDeclarer(BoltDeclarer):
    """The engine's ``BoltDeclarer`` over a draft of its own: the same methods, chaining
    alike; at build time its groupings and configuration go onto the engine's declarer."""

    def __init__(self, component_id: str) -> None:
        super().__init__(ComponentDraft(component_id, Component(), False, 1, 1))
        self.component_id = component_id

    def apply(self, declarer: BoltDeclarer) -> None:
        """Add the declared groupings and configuration to the engine's ``declarer``."""
        self.copy_to(declarer)


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
