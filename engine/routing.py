"""Routing: for each stream a task emits on, which groupers choose the receiving tasks.

One ``Route`` per (task, stream), built once at start-up from the wiring; the collector
asks it on every emit. A stream with exactly one subscribing bolt keeps that grouper in
``single`` (the emit fast path), and where that bolt has a single task and no custom
grouping could choose otherwise, the task itself in ``only`` (no grouper call at all).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from engine.grouping import CustomGrouper, Grouper, ShuffleGrouper, make_grouper
from engine.queue_watch import QueueWatch
from engine.tuples import Source

if TYPE_CHECKING:
    from engine.context import TopologyContext
    from engine.topology import ComponentDef
    from engine.wiring import Wiring

__all__ = ["Route", "routes_for"]


@dataclass(slots=True)
class Route:
    """Where one (task, stream) sends: groupers for normal streams, allowed targets for direct."""

    source: Source
    groupers: list[Grouper] = field(default_factory=list)
    direct: bool = False
    direct_targets: frozenset[int] = frozenset()
    # The one grouper of a stream with exactly one subscriber: the emit fast path.
    single: Grouper | None = None
    # That subscriber's only task, where no grouping can choose another: no grouper call.
    only: int = -1
    only_targets: list[int] = field(default_factory=list)
    width: int = 0

    def freeze(self) -> None:
        """Precompute the fast path once every grouper is added."""
        self.single = self.groupers[0] if len(self.groupers) == 1 and not self.direct else None
        self.only = -1
        if self.single is not None and len(self.single.targets) == 1 \
                and not isinstance(self.single, CustomGrouper):
            self.only = self.single.targets[0]
            self.only_targets = [self.only]
        self.width = len(self.source.fields)


def routes_for(d: ComponentDef, task_id: int, context: TopologyContext,
               wiring: Wiring, watch: QueueWatch | None = None) -> dict[str, Route]:
    """The routes of task ``task_id`` of ``d``, one per declared stream.

    A custom grouping is copied per emitting task and prepared here (user code). Given
    the ``watch`` over the executors' queues, shuffle groupings route around full ones.
    """
    routes = {}
    for stream, sd in d.streams.items():
        route = Route(Source(d.id, task_id, stream, sd.fields), direct=sd.direct)
        for target, sub in wiring.subscribers.get((d.id, stream), []):
            targets = wiring.component_tasks[target.id]
            if sub.kind == "direct":
                route.direct_targets = route.direct_targets | frozenset(targets)
                continue
            custom = None
            if sub.kind == "custom":
                custom = copy.copy(sub.custom)
                custom.prepare(context, stream, list(targets))
            indexes = [sd.fields.index(f) for f in sub.fields]
            grouper = make_grouper(sub.kind, targets, indexes, custom, task_id)
            if watch is not None and isinstance(grouper, ShuffleGrouper) and len(targets) > 1:
                grouper.watch(watch, [wiring.task_executor[t] for t in grouper.targets])
            route.groupers.append(grouper)
        route.freeze()
        routes[stream] = route
    return routes
