"""A Kafka spout's input checked at start: a topic that did not exist, or holds no record.

A misspelt topic otherwise idles forever in silence: a broker that creates topics on use
(Kafka's ``auto.create.topics.enable``, the test broker) creates it empty when the spout
subscribes, and the run shows ``emitted=0``. So, once per process, consumer group and
topic:

- ``missing_before`` asks the cluster's metadata which topics exist *before* the
  subscription (that request names no topic, so it creates none);
- ``warn_if_idle`` then says, in one WARNING line per topic, that a topic did not exist
  (and whether the broker created it on subscribe, with how many partitions), or that it
  exists but holds no record: every partition's log start equals its end.

The end is the high watermark of a fetch response, read by a consumer of no group, not
the answer to ListOffsets "latest": a broker may answer that below the end (the test
broker answers the last batch's base offset plus one), and no judgement here rests on it.
The check never fails the spout: an error or no answer within ``CHECK_SECS`` is logged at
DEBUG and the run goes on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition

from connectors.kafka import client_options
from connectors.kafka.client_start import started

__all__ = ["CHECK_SECS", "idle_reason", "missing_before", "warn_if_idle"]

log = logging.getLogger("connectors.kafka")

CHECK_SECS = 10.0
"""How long the check waits for metadata or a fetch answer before giving up, quietly."""

_checked: set[tuple[str, str]] = set()  # (group, topic) checked by this process


async def missing_before(consumer: AIOKafkaConsumer, group: str,
                         topics: Sequence[str]) -> list[str] | None:
    """Among ``topics`` not checked yet for ``group`` in this process, those the cluster's
    metadata does not list (``None``: nothing to check); marks them checked."""
    fresh = [t for t in topics if (group, t) not in _checked]
    if not fresh:
        return None
    _checked.update((group, t) for t in fresh)
    known = await consumer.topics()  # metadata of every topic: creates none
    return [t for t in fresh if t not in known]


def idle_reason(topic: str, existed: bool, partitions: int | None,
                ends: Mapping[int, tuple[int, int]] | None) -> str | None:
    """Why ``topic`` gives the spout nothing, or ``None`` when it holds records;
    ``ends`` maps each partition to its (log start, high watermark)."""
    if not existed:
        made = (f"the broker created it on subscribe with {partitions} partitions"
                if partitions else "the broker has not created it")
        return f"topic {topic!r} did not exist at start ({made}): is the name right?"
    if ends is not None and all(high <= start for start, high in ends.values()):
        return (f"topic {topic!r} exists ({len(ends)} partitions) but holds no record: "
                f"the spout emits nothing until one is written")
    return None


async def warn_if_idle(consumer: AIOKafkaConsumer, who: str, topics: Sequence[str],
                       missing: Sequence[str], bootstrap: str | list[str],
                       options: Mapping[str, Any]) -> None:
    """One WARNING per topic of ``topics`` that did not exist (``missing``) or holds no
    record; ``consumer`` is the spout's, already subscribed."""
    try:
        async with asyncio.timeout(CHECK_SECS):
            existing = [t for t in topics if t not in missing]
            ends = await _ends(bootstrap, options, existing) if existing else {}
            for topic in missing:
                await _metadata_for(consumer, topic)
            known = sorted(t for t in await consumer.topics() if not t.startswith("__"))
    except Exception as exc:  # a check, not the spout's work: never fails the run
        log.debug("%s: the input check gave up: %r", who, exc)
        return
    for topic in topics:
        parts = consumer.partitions_for_topic(topic)
        why = idle_reason(topic, topic not in missing, len(parts) if parts else None,
                          ends.get(topic))
        if why is not None:
            others = [t for t in known if t != topic]
            log.warning("%s: %s (topics on the broker: %s)", who, why, others)


async def _metadata_for(consumer: AIOKafkaConsumer, topic: str) -> None:
    """Until the consumer's metadata knows ``topic`` (the broker created it)."""
    while not consumer.partitions_for_topic(topic):
        await asyncio.sleep(0.2)


async def _ends(bootstrap: str | list[str], options: Mapping[str, Any],
                topics: Sequence[str]) -> dict[str, dict[int, tuple[int, int]]]:
    """``{topic: {partition: (log start, fetch high watermark)}}``, by a consumer of no
    group that fetches from each partition's start."""
    reader = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                              **{**client_options.shared(options),
                                 "auto_offset_reset": "earliest"})
    await started(reader)
    try:
        await reader.topics()
        tps = [TopicPartition(t, p) for t in topics
               for p in sorted(reader.partitions_for_topic(t) or ())]
        starts = await reader.beginning_offsets(tps)
        reader.assign(tps)
        while any(reader.highwater(tp) is None for tp in tps):
            await reader.getmany(*tps, timeout_ms=200, max_records=1)
        out: dict[str, dict[int, tuple[int, int]]] = {}
        for tp in tps:
            out.setdefault(tp.topic, {})[tp.partition] = (starts[tp], reader.highwater(tp) or 0)
        return out
    finally:
        await reader.stop()
