"""What a task knows about its place in the running topology."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from engine.tuples import Fields

__all__ = ["StopTime", "TopologyContext"]


class StopTime:
    """When a stop wants a topology's tasks closed: one per topology, shared by its
    tasks' contexts; ``deadline`` (loop time) is None until the drain is over.
    ``refused`` is the one line of a task that found the topology must not go on (None
    while nothing refused it): the runner then stops it with exit status 2."""

    __slots__ = ("deadline", "refused")

    def __init__(self) -> None:
        self.deadline: float | None = None
        self.refused: str | None = None


class TopologyContext:
    """A task's view: its id, its component, every component's task ids and fields."""

    def __init__(self, topology_name: str, task_id: int, component_id: str,
                 component_tasks: Mapping[str, list[int]],
                 output_fields: Mapping[str, Mapping[str, Fields]],
                 sources: Mapping[str, list[tuple[str, str]]],
                 conf: Mapping[str, Any], stop: StopTime | None = None) -> None:
        self.topology_name = topology_name
        self.task_id = task_id
        self.component_id = component_id
        self._component_tasks = component_tasks
        self._output_fields = output_fields
        self._sources = sources
        self.conf = conf
        self._stop = StopTime() if stop is None else stop

    @property
    def stop_deadline(self) -> float | None:
        """The loop time (``asyncio.get_running_loop().time()``) by which a stop wants
        every task closed, set once its drain is over: the end of the drain
        (``kill_topology``'s ``wait_secs``, the runner's ``--drain-secs``), and at least
        ``CLOSE_GRACE_SECS`` (2 s) after the drain; None while the topology runs. A
        ``close`` or ``cleanup`` whose goodbyes can hang (leaving a Kafka consumer group)
        bounds them by it."""
        return self._stop.deadline

    def refuse(self, why: str) -> None:
        """This task found that the topology must not go on (state it cannot trust, a
        group that runs something else): ``why`` is logged once at ERROR, the runner stops
        the topology and exits with status 2 (under ``--workers``, every worker stops),
        and ``LocalCluster.refusal(name)`` returns it. The first refusal is kept."""
        if self._stop.refused is None:
            self._stop.refused = why
            logging.getLogger("engine").error("%s: %s", self.topology_name, why)

    @property
    def refused(self) -> str | None:
        """The topology's refusal (``refuse``), or None."""
        return self._stop.refused

    @property
    def task_index(self) -> int:
        """0-based index of this task among its component's tasks."""
        return self._component_tasks[self.component_id].index(self.task_id)

    def component_tasks(self, component_id: str) -> list[int]:
        """Task ids of ``component_id``, ascending (empty for an unknown id)."""
        return list(self._component_tasks.get(component_id, ()))

    def this_component_tasks(self) -> list[int]:
        """Task ids of this task's own component."""
        return self.component_tasks(self.component_id)

    def component_ids(self) -> list[str]:
        """Every user component id in the topology."""
        return [c for c in self._component_tasks if not c.startswith("__")]

    def output_fields(self, component_id: str, stream: str = "default") -> Fields:
        """The fields ``component_id`` declares on ``stream``."""
        return self._output_fields[component_id][stream]

    def this_sources(self) -> list[tuple[str, str]]:
        """``(component, stream)`` pairs this task's component subscribes to."""
        return list(self._sources.get(self.component_id, ()))

    def __repr__(self) -> str:
        return (f"TopologyContext(topology={self.topology_name!r}, "
                f"component={self.component_id!r}, task={self.task_id})")
