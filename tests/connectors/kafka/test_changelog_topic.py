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
    restore_partition,
)
from connectors.kafka.repartition import PartitionMismatch
from engine.state.changelog import ChangelogRestore, encode_changes, partition_namespace
from engine.state.kv import KeyValueState
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
        await writer.write(1, encode_changes({"a": 1, "b": 1}, 5))
        await writer.write(1, encode_changes({"a": 2, "b": DELETED, "c": 1}, 9))
        await writer.write(1, encode_changes({"a": 7}, 12))  # not committed yet
        await writer.write(0, encode_changes({"other": 1}, 3))
    finally:
        await writer.stop()
    store = SqliteStateStore(tmp_path / "s.sqlite3")
    ns = partition_namespace("t/count", 1)
    restore = ChangelogRestore(store, ns, committed=10)
    applied, secs = await restore_partition(bootstrap, {}, topic, 1, restore, timeout=30)
    assert (applied, restore.skipped) == (5, 1) and secs < 30
    assert dict(KeyValueState(store, ns)) == {"a": 2, "c": 1}
    empty = unique("empty")
    await kafka_broker.create_topic(empty, 1)
    nothing = ChangelogRestore(store, "t/x/p0", committed=10)
    assert (await restore_partition(bootstrap, {}, empty, 0, nothing, timeout=30))[0] == 0
