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

__all__ = ["SHORT_SESSION_MS", "instance_id"]

SHORT_SESSION_MS = 6000
"""The shortest session a static member gets: below it the session rarely outlasts a restart
of the process, so the group drops the member and rebalances all the same (a Kafka broker
refuses such a session by default, ``group.min.session.timeout.ms``; the test broker kept
rebalancing its static members every few seconds with 2 s sessions)."""

_ILLEGAL = re.compile(r"[^A-Za-z0-9._-]")
_MAX_LENGTH = 249  # Kafka's limit on a group instance id


def instance_id(conf: Mapping[str, Any], context: Any, options: Mapping[str, Any],
                log: logging.Logger | None = None) -> str | None:
    """The static member id of the consumer of spout task ``context`` (consumer options
    ``options``) in a process whose configuration is ``conf``, or None: a dynamic member,
    without ``topology.worker.id`` or with a ``session_timeout_ms`` under
    ``SHORT_SESSION_MS`` (said once per component, as a WARNING to ``log``).

    ``<worker id>-<component id>-<task index>``, the component id with every character
    Kafka does not allow in an instance id replaced by ``_`` and cut where the whole would
    pass Kafka's 249 characters.
    """
    worker = conf.get(TOPOLOGY_WORKER_ID)
    if worker is None or _short_session(options, context, log):
        return None
    worker, index = str(worker), str(context.task_index)
    room = _MAX_LENGTH - len(worker) - len(index) - 2
    component = _ILLEGAL.sub("_", str(context.component_id))[:room]
    return f"{worker}-{component}-{index}"


_warned: set[str] = set()  # components told so in this process


def _short_session(options: Mapping[str, Any], context: Any,
                   log: logging.Logger | None) -> bool:
    session = options.get("session_timeout_ms", 10_000)
    if session >= SHORT_SESSION_MS:
        return False
    component = str(context.component_id)
    if log is not None and component not in _warned:
        _warned.add(component)
        log.warning("KafkaSpout %r: session_timeout_ms=%s cannot outlast a restart of this "
                    "process, so its consumers stay dynamic members of their group (a "
                    "restart is a rebalance); give it %d or more for static membership "
                    "(docs/scaling.md)", context.component_id, session, SHORT_SESSION_MS)
    return True
