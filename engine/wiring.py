"""Wiring: task ids, executors, queue sizes and subscriptions, decided from topology and config.

A pure function of its inputs (no loop, no user code): ``plan(topology, conf,
component_conf)`` says everything the runtime then builds. Task ids are global and start at
1, spout tasks first (their ids must fit the acker's packed record). A component's
``num_tasks`` tasks are spread over ``parallelism`` executors in contiguous ranges, as Storm
does; executors are numbered in component order and each has one receive queue.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.config import TOPOLOGY_ACKER_EXECUTORS, TOPOLOGY_EXECUTOR_RECEIVE_BUFFER_SIZE
from engine.topology import ComponentDef, Subscription, Topology

__all__ = ["ExecutorPlan", "Wiring", "plan", "split"]


@dataclass(frozen=True, slots=True)
class ExecutorPlan:
    """One executor: its index (and queue's), component, tasks and queue bound."""

    index: int
    component: str
    is_spout: bool
    tasks: tuple[int, ...]
    queue_size: int


@dataclass(frozen=True)
class Wiring:
    """Where every task runs and who hears every stream."""

    component_tasks: dict[str, list[int]]
    """Component id -> its task ids, ascending."""
    task_executor: list[int]
    """Task id -> executor index (index 0 unused: task ids start at 1)."""
    executors: list[ExecutorPlan]
    """In index order."""
    spout_executors: list[int]
    """Indexes of the executors that run spout tasks, ascending."""
    num_ackers: int
    acker_queue_size: int
    subscribers: dict[tuple[str, str], list[tuple[ComponentDef, Subscription]]]
    """(source component, stream) -> the bolts subscribed to it, with how."""

    def executors_of(self, component: str) -> list[ExecutorPlan]:
        """The executors running ``component``'s tasks."""
        return [e for e in self.executors if e.component == component]

    def downstream(self, component: str) -> list[ComponentDef]:
        """Every bolt a tuple of ``component`` can reach, on any stream, nearest first."""
        seen: dict[str, ComponentDef] = {}
        frontier = [component]
        while frontier:
            source = frontier.pop(0)
            for (src, _), subs in self.subscribers.items():
                if src != source:
                    continue
                for d, _ in subs:
                    if d.id not in seen and d.id != component:
                        seen[d.id] = d
                        frontier.append(d.id)
        return list(seen.values())


def split(tasks: list[int], executors: int) -> list[list[int]]:
    """``tasks`` in ``min(executors, len(tasks))`` contiguous runs, the first ones longer."""
    n = min(executors, len(tasks))
    base, extra = divmod(len(tasks), n)
    out, i = [], 0
    for k in range(n):
        size = base + (1 if k < extra else 0)
        out.append(tasks[i:i + size])
        i += size
    return out


def plan(topology: Topology, conf: dict[str, Any],
         component_conf: dict[str, dict[str, Any]]) -> Wiring:
    """The wiring of ``topology`` under the (validated) topology and component configs."""
    comps = topology.components
    component_tasks: dict[str, list[int]] = {}
    next_id = 1
    for d in comps.values():
        component_tasks[d.id] = list(range(next_id, next_id + d.num_tasks))
        next_id += d.num_tasks
    task_executor = [0] * next_id
    executors: list[ExecutorPlan] = []
    for d in comps.values():
        size = component_conf[d.id][TOPOLOGY_EXECUTOR_RECEIVE_BUFFER_SIZE]
        for part in split(component_tasks[d.id], d.parallelism):
            index = len(executors)
            for t in part:
                task_executor[t] = index
            executors.append(ExecutorPlan(index, d.id, d.is_spout, tuple(part), size))
    subscribers: dict[tuple[str, str], list[tuple[ComponentDef, Subscription]]] = {}
    for d in comps.values():
        for sub in d.inputs:
            subscribers.setdefault((sub.source, sub.stream), []).append((d, sub))
    return Wiring(
        component_tasks=component_tasks,
        task_executor=task_executor,
        executors=executors,
        spout_executors=[e.index for e in executors if e.is_spout],
        num_ackers=conf[TOPOLOGY_ACKER_EXECUTORS],
        acker_queue_size=conf[TOPOLOGY_EXECUTOR_RECEIVE_BUFFER_SIZE],
        subscribers=subscribers,
    )
