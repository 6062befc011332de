"""``stormloop topics`` and ``stormloop groups`` against the real test broker: a topic made
with N partitions and its configs, described with its true ends (the fetch high
watermark, where this broker's ListOffsets answers less), a group's lag read without
joining, and one line for each thing that goes wrong."""

from __future__ import annotations

import asyncio
import socket

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from tests.connectors.kafka.helpers import produce, unique
from tests.stormloop.test_kafka_tools import stormloop


def test_a_topic_is_created_with_n_partitions_and_its_configs_then_described(
        kafka_broker) -> None:
    topic, bootstrap = unique("orders"), kafka_broker.bootstrap
    made = stormloop("topics", "create", topic, "--partitions", "3", "--config",
                     "retention.ms=86400000", "--config", "cleanup.policy=delete",
                     "--bootstrap", bootstrap)
    assert made.returncode == 0, made.stderr
    assert made.stdout == (f"created topic {topic} with 3 partitions retention.ms=86400000 "
                           f"cleanup.policy=delete\n")
    asyncio.run(produce(bootstrap, topic, [(None, b"%d" % i) for i in range(5)], partition=1))
    shown = stormloop("topics", "describe", topic, "--bootstrap", bootstrap)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines() == [
        f"topic {topic}: 3 partitions, replication factor 1",
        "configs: cleanup.policy=delete retention.ms=86400000",
        "partition\tstart\tend\trecords",
        "0\t0\t0\t0", "1\t0\t5\t5", "2\t0\t0\t0",  # 5: ListOffsets "latest" says 1 here
        "total\t\t\t5"]
    listed = stormloop("topics", "list", "--bootstrap", bootstrap)
    assert listed.returncode == 0 and f"{topic}\t3" in listed.stdout.splitlines(), listed


def test_what_goes_wrong_is_one_line_status_2(kafka_broker) -> None:
    topic, bootstrap = unique("twice"), kafka_broker.bootstrap
    assert stormloop("topics", "create", topic, "--partitions", "2",
                     "--bootstrap", bootstrap).returncode == 0
    cases = {
        ("topics", "create", topic, "--partitions", "4"):
            f"stormloop topics: topic {topic!r} exists already; nothing changed (stormloop "
            f"topics describe {topic} shows it)",
        ("topics", "create", unique("t"), "--partitions", "0"):
            "stormloop topics: --partitions must be a whole number >= 1, got '0'",
        ("topics", "create", unique("t"), "--partitions", "four"):
            "stormloop topics: --partitions must be a whole number >= 1, got 'four'",
        ("topics", "create", unique("t"), "--partitions", "1", "--config", "retention.ms"):
            "stormloop topics: --config expects KEY=VALUE (e.g. retention.ms=86400000), got "
            "'retention.ms'",
    }
    for args, line in cases.items():
        proc = stormloop(*args, "--bootstrap", bootstrap)
        assert (proc.returncode, proc.stderr) == (2, line + "\n"), args
    missing = stormloop("topics", "describe", "no-such-topic-here", "--bootstrap", bootstrap)
    assert missing.returncode == 2
    assert missing.stderr.startswith("stormloop topics: topic 'no-such-topic-here' does not "
                                     "exist; topics: [") and missing.stderr.count("\n") == 1


async def _commit(bootstrap: str, group: str, offsets: dict[TopicPartition, int]) -> None:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                                enable_auto_commit=False)
    await consumer.start()
    try:
        consumer.assign(list(offsets))
        await consumer.commit(offsets)
    finally:
        await consumer.stop()


def test_a_groups_committed_offsets_and_lag_per_partition(kafka_broker) -> None:
    topic, group, bootstrap = unique("events"), unique("g"), kafka_broker.bootstrap
    assert stormloop("topics", "create", topic, "--partitions", "2",
                     "--bootstrap", bootstrap).returncode == 0
    for partition, n in ((0, 7), (1, 4)):
        asyncio.run(produce(bootstrap, topic, [(None, b"x")] * n, partition=partition))
    never = stormloop("groups", "describe", group, "--topic", topic, "--bootstrap", bootstrap)
    assert never.returncode == 0, never.stderr
    assert never.stdout.splitlines()[-1] == (f"(group {group!r} has committed nothing on "
                                             f"{topic!r})")
    asyncio.run(_commit(bootstrap, group, {TopicPartition(topic, 0): 5}))
    proc = stormloop("groups", "describe", group, "--topic", topic, "--bootstrap", bootstrap)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [f"group {group} on topic {topic}",
                                        "partition\tcommitted\tend\tlag",
                                        "0\t5\t7\t2", "1\t-\t4\t4", "total\t\t\t6"]


@pytest.mark.parametrize("args", [("topics", "list"), ("topics", "describe", "t"),
                                  ("topics", "create", "t", "--partitions", "2"),
                                  ("groups", "describe", "g", "--topic", "t")])
def test_no_broker_is_one_line_status_1(args: tuple[str, ...]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    proc = stormloop(*args, "--bootstrap", f"127.0.0.1:{port}")
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"stormloop {args[0]}: cannot reach a Kafka broker at 127.0.0.1:{port} ("), lines


def test_help_names_every_command() -> None:
    for args, words in ((("topics", "--help"), ("create", "list", "describe")),
                        (("topics", "create", "--help"), ("--partitions", "--config")),
                        (("groups", "describe", "--help"), ("--topic", "without joining"))):
        proc = stormloop(*args)
        assert proc.returncode == 0 and all(w in proc.stdout for w in words), proc.stdout
    usage = stormloop("--help").stdout
    assert "topics create NAME --partitions N" in usage and "groups describe GROUP" in usage
