"""Changelog topics on the test broker: created compacted with the input's partition count,
refused on a mismatch, written per partition with the broker's confirmation, and restored
into a partition's namespace up to the committed input offset."""

from __future__ import annotations

from pathlib import Path

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from connectors.kafka.changelog import (
    ChangelogWriter,
    changelog_name,
    ensure_changelog,
    read_partition,
)
from connectors.kafka.repartition import PartitionMismatch
from engine.state.changelog import ChangelogRestore, encode_changes, partition_namespace
from engine.state.partition_store import PartitionStore
from engine.state.store import DELETED, SqliteStateStore
from tests.connectors.kafka.helpers import partitions, unique


async def _configs(bootstrap: str, topic: str) -> dict[str, str]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        [response] = await admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, topic)])
        return {name: value for name, value, *_ in response.resources[0][4]}
    finally:
        await admin.close()


async def test_created_compacted_with_the_inputs_partitions_and_a_mismatch_refused(
        kafka_broker) -> None:
    bootstrap = kafka_broker.bootstrap
    source = unique("words")
    await kafka_broker.create_topic(source, 3)
    topic = changelog_name(unique("wc"), "count")
    assert topic.endswith("-count-changelog")
    assert await ensure_changelog(bootstrap, {}, [source], topic) == 3
    assert len(await partitions(bootstrap, topic)) == 3
    assert (await _configs(bootstrap, topic))["cleanup.policy"] == "compact"
    assert await ensure_changelog(bootstrap, {}, [source], topic) == 3  # checked, kept
    other = unique("words")
    await kafka_broker.create_topic(other, 2)
    with pytest.raises(PartitionMismatch) as refused:
        await ensure_changelog(bootstrap, {}, [other], topic)
    assert str(refused.value).startswith(f"changelog topic {topic!r} has 3 partitions, its "
                                         f"input {other} has 2")


async def test_a_partition_is_restored_up_to_the_committed_offset(kafka_broker,
                                                                  tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap
    source = unique("words")
    await kafka_broker.create_topic(source, 2)
    topic = changelog_name(unique("wc"), "count")
    await ensure_changelog(bootstrap, {}, [source], topic)
    writer = ChangelogWriter(topic, bootstrap, {})
    await writer.start()
    try:
        ends = [await writer.write({1: encode_changes({"a": 1, "b": 1}, 5)}),
                await writer.write({1: encode_changes({"a": 2, "b": DELETED, "c": 1}, 9),
                                    0: encode_changes({"other": 1}, 3)}),
                await writer.write({1: encode_changes({"a": 7}, 12)})]  # not committed yet
    finally:
        await writer.stop()
    assert ends == [{1: 2}, {1: 5, 0: 1}, {1: 6}]  # the offset after each partition's last
    store = PartitionStore(SqliteStateStore(tmp_path / "s.sqlite3"))
    ns = partition_namespace("t/count", 1)
    store.begin(ns, topic)
    restore = ChangelogRestore(store, ns, 10, "changelog")
    read = await read_partition(bootstrap, {}, topic, 1, 0, restore)
    assert (restore.finish(), restore.skipped) == (5, 1)
    assert read.high == 6 and not read.empty and not read.rewound
    assert store.load(ns) == {"a": 2, "c": 1}
    assert store.position(ns).next_offset == 6  # type: ignore[union-attr]
    # From a position: only what came after it.
    later = ChangelogRestore(store, ns, 20, "changelog")
    await read_partition(bootstrap, {}, topic, 1, 5, later)
    assert later.finish() == 1 and later.records == 1 and store.load(ns) == {"a": 7, "c": 1}
    # A position beyond the end: the changelog was created again.
    beyond = await read_partition(bootstrap, {}, topic, 0, 40, ChangelogRestore(
        store, "t/count/p0", 10, "changelog"))
    assert beyond.rewound and beyond.high == 1
    empty = unique("empty")
    await kafka_broker.create_topic(empty, 1)
    nothing = ChangelogRestore(store, "t/x/p0", 10, "changelog")
    got = await read_partition(bootstrap, {}, empty, 0, 0, nothing)
    assert got.empty and nothing.records == 0
