"""Topics the engine creates beside the user's (repartition and changelog topics): created
with their input's partition count and configs, or checked; a different count is refused.

``ensure_topic`` creates a topic with as many partitions as its inputs (the largest, for
several), or checks an existing one: a different partition count is refused with
``PartitionMismatch``, one line naming the topic and both counts. ``topic_exists`` asks
the cluster's metadata without creating anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError

from connectors.kafka import client_options
from connectors.kafka.client_start import started

__all__ = ["RETENTION_MS", "PartitionMismatch", "ensure_topic", "topic_exists"]

RETENTION_MS = 7 * 24 * 3600 * 1000
"""How long a repartition record is kept: a reader further behind than this loses records."""

_CONFIGS = {"cleanup.policy": "delete", "retention.ms": str(RETENTION_MS)}


class PartitionMismatch(ValueError):
    """A repartition topic whose partition count differs from its input's."""


async def ensure_topic(bootstrap: str | list[str], options: Mapping[str, Any],
                       inputs: Sequence[str], topic: str,
                       configs: Mapping[str, str] | None = None, kind: str = "repartition") -> int:
    """Create ``topic`` with the partition count of ``inputs`` (the largest, for several)
    and ``configs`` (default: a repartition topic's), or check that an existing one has
    that count; returns the count. Raises ``PartitionMismatch`` naming the ``kind`` of
    topic."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, **client_options.shared(options))
    await started(admin)
    try:
        found = await _partition_counts(admin, [*inputs, topic])
        known = [found[t] for t in inputs if t in found]
        if not known:
            raise ValueError(f"{kind} topic {topic!r}: its input {list(inputs)} does not "
                             f"exist; create it first")
        want = max(known)
        if topic not in found:
            try:
                await admin.create_topics([NewTopic(topic, want, _replicas(found, inputs),
                                                    topic_configs=dict(configs or _CONFIGS))])
            except TopicAlreadyExistsError:  # another process created it meanwhile
                found.update(await _partition_counts(admin, [topic]))
        _check(topic, found.get(topic, want), want, inputs, kind)
        return want
    finally:
        await admin.close()


async def _partition_counts(admin: AIOKafkaAdminClient, topics: list[str]) -> dict[str, Any]:
    """Partition count per existing topic of ``topics`` (and ``(name, "replicas")`` keys)."""
    counts: dict[str, Any] = {}
    # Only topics that exist are described: describing a missing one may create it
    # (a broker's auto.create.topics.enable), with the broker's default partition count.
    existing = set(await admin.list_topics())
    topics = [t for t in topics if t in existing]
    if not topics:
        return counts
    for entry in await admin.describe_topics(topics):
        if entry["error_code"] == 0 and entry["partitions"]:
            counts[entry["topic"]] = len(entry["partitions"])
            counts[(entry["topic"], "replicas")] = len(entry["partitions"][0]["replicas"])
    return counts


def _replicas(found: Mapping[Any, Any], inputs: Sequence[str]) -> int:
    return max((found.get((t, "replicas"), 1) for t in inputs), default=1) or 1


def _check(topic: str, has: int, want: int, inputs: Sequence[str], kind: str) -> None:
    if has != want:
        source = inputs[0] if len(inputs) == 1 else f"{list(inputs)} (largest)"
        raise PartitionMismatch(
            f"{kind} topic {topic!r} has {has} partitions, its input {source} has "
            f"{want}; see docs/scaling.md on changing partition counts")


async def topic_exists(bootstrap: str | list[str], options: Mapping[str, Any],
                       topic: str) -> bool:
    """Whether ``topic`` exists (listed in the cluster's metadata; never creates it)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, **client_options.shared(options))
    await started(admin)
    try:
        return topic in set(await admin.list_topics())
    finally:
        await admin.close()
