"""Static group membership: the ``group_instance_id`` of each Kafka spout task's consumer.

A process given an identity (``topology.worker.id``; ``--workers N`` gives worker I one)
makes each of its consumers a static member of its group: the id is the worker id, the
component id and the task's index within the component, so it is unique per consumer
(every spout task, and the reader of each repartition hop, is a consumer of its own) and
the same after a restart of that process. The group then keeps a restarted member's
partitions for it instead of moving them to the other members and back. Without an
identity a consumer is a dynamic member.

A user never sets ``group_instance_id`` in a spout's consumer options: every task of the
spout (and the reader of a hop behind it) would carry the same id and fence the others.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

from engine.config import TOPOLOGY_WORKER_ID

__all__ = ["SHORT_SESSION_MS", "instance_id", "warn_short_session"]

SHORT_SESSION_MS = 6000
"""Below this a static member's session rarely outlasts a restart of its process (and a
Kafka broker refuses it by default: ``group.min.session.timeout.ms``)."""

_ILLEGAL = re.compile(r"[^A-Za-z0-9._-]")
_MAX_LENGTH = 249  # Kafka's limit on a group instance id


def instance_id(conf: Mapping[str, Any], context: Any) -> str | None:
    """The static member id of the consumer of spout task ``context`` in a process whose
    configuration is ``conf``, or None (a dynamic member) without ``topology.worker.id``.

    ``<worker id>-<component id>-<task index>``, the component id with every character
    Kafka does not allow in an instance id replaced by ``_`` and cut where the whole would
    pass Kafka's 249 characters.
    """
    worker = conf.get(TOPOLOGY_WORKER_ID)
    if worker is None:
        return None
    worker, index = str(worker), str(context.task_index)
    room = _MAX_LENGTH - len(worker) - len(index) - 2
    component = _ILLEGAL.sub("_", str(context.component_id))[:room]
    return f"{worker}-{component}-{index}"


_warned: set[tuple[str, str]] = set()


def warn_short_session(options: Mapping[str, Any], group: str, component: str,
                       log: logging.Logger) -> None:
    """One WARNING per group and component in this process when a static member's
    ``session_timeout_ms`` is under ``SHORT_SESSION_MS``: the group would drop the member
    during a restart and rebalance all the same."""
    session = options.get("session_timeout_ms", 10_000)
    if session >= SHORT_SESSION_MS or (group, component) in _warned:
        return
    _warned.add((group, component))
    log.warning("KafkaSpout %r: session_timeout_ms=%s is shorter than a restart of this "
                "process takes: its group drops the static member meanwhile and rebalances "
                "all the same (a broker may keep rebalancing); use %d or more "
                "(docs/scaling.md)", component, session, SHORT_SESSION_MS)
