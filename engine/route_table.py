"""The route table of a task: one ``Route`` per stream it declares, built from the wiring.

Built once per task at start-up (never on the hot path). A custom grouping is copied per
emitting task and prepared here: the only user code this runs.
"""

from __future__ import annotations

import copy

from engine.context import TopologyContext
from engine.grouping import ShuffleGrouper, make_grouper
from engine.queue_watch import QueueWatch
from engine.routing import Route
from engine.topology import ComponentDef
from engine.tuples import Source
from engine.wiring import Wiring

__all__ = ["routes_for"]


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
