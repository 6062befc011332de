"""Whether a process reads all of its topic: keyed results split without a word, found.

With ``topology.workers`` at 1 a fields grouping stays inside the process, which is right
only while the process reads every partition. ``SplitWatch`` (one per spout task whose
output feeds a fields grouping) notes the partitions each task of this process holds and,
once the assignment has not changed for ``STABLE_CHECKS`` looks, logs one ERROR per group
and topic if this process holds some but not all of a topic's partitions.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["STABLE_CHECKS", "SplitWatch"]

log = logging.getLogger("connectors.kafka")

STABLE_CHECKS = 3
"""Looks (one a second) an assignment must stay the same before it is judged: a rebalance
hands partitions to a process's tasks one after the other."""

# (group, topic) -> {task id: partitions it holds}, for the tasks of this process.
_held: dict[tuple[str, str], dict[int, frozenset[int]]] = {}
_warned: set[tuple[str, str]] = set()


class SplitWatch:
    """Logs once when this process holds only part of a topic that feeds keyed work."""

    def __init__(self, component: str, task_id: int, group: str, topics: list[str]) -> None:
        self._component = component
        self._task = task_id
        self._group = group
        self._topics = topics
        self._last: frozenset[Any] | None = None
        self._stable = 0

    def check(self, consumer: Any) -> None:
        """Note this task's partitions; judge the process's once they settled."""
        assigned = frozenset(consumer.assignment())
        self._stable = self._stable + 1 if assigned == self._last else 0
        self._last = assigned
        for topic in self._topics:
            mine = frozenset(tp.partition for tp in assigned if tp.topic == topic)
            _held.setdefault((self._group, topic), {})[self._task] = mine
        if self._stable < STABLE_CHECKS:
            return
        for topic in self._topics:
            self._judge(topic, consumer.partitions_for_topic(topic) or set())

    def _judge(self, topic: str, partitions: set[int]) -> None:
        key = (self._group, topic)
        held = set().union(*_held.get(key, {}).values())
        if not held or len(held) >= len(partitions) or key in _warned:
            return
        _warned.add(key)
        log.error("KafkaSpout %r: this process reads %d of the %d partitions of %r (group %r) "
                  "while topology.workers is 1: keyed results are split between the "
                  "processes of the group, each fields grouping downstream seeing part of "
                  "each key; set topology.workers to the number of processes (--workers N "
                  "sets it)", self._component, len(held), len(partitions), topic,
                  self._group)

    def forget(self) -> None:
        """This task stopped: its partitions no longer count."""
        for topic in self._topics:
            _held.get((self._group, topic), {}).pop(self._task, None)
