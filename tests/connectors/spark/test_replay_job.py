"""The replay job on the test broker and a local session: counts, writes, progress, filters."""

from __future__ import annotations

import asyncio
import dataclasses

from connectors.spark.job import run_replay
from connectors.spark.replay import REPLAY_HEADERS, ReplayOptions
from connectors.spark.summary import Malformed, ReplaySummary
from tests.connectors.spark.helpers import failed, produce, read_all, unique


def _produce(bootstrap: str, topic: str, payloads: list[bytes], partition: int) -> None:
    asyncio.run(produce(bootstrap, topic, payloads, partition))


def _values(bootstrap: str, topic: str) -> list[bytes]:
    return sorted(r.value for r in asyncio.run(read_all(bootstrap, topic)))


def test_replays_once_dropping_duplicates_and_malformed(kafka_broker, spark) -> None:
    bootstrap = kafka_broker.bootstrap
    failed_topic, orders, group = unique("failed"), unique("orders"), unique("replay")
    kafka_broker.create_topic_sync(failed_topic, partitions=2)
    kafka_broker.create_topic_sync(orders)
    _produce(bootstrap, failed_topic, [
        *(failed(orders, i, reason="poison").to_json() for i in range(6)),
        failed(orders, 2, reason="poison", attempts=5, failed_at=1_800_000_000_000).to_json(),
        b"not json",
    ], partition=0)
    _produce(bootstrap, failed_topic, [
        *(failed(orders, i, reason="timeout").to_json() for i in range(6, 9)),
        failed(orders, 7, reason="timeout").to_json(),
        b'{"topic": "x"}',
    ], partition=1)
    options = ReplayOptions(bootstrap, failed_topic, group_id=group, dry_run=True)

    dry = run_replay(options, spark)
    assert (dry.read, dry.malformed, dry.duplicates, dry.filtered, dry.replayed) == (
        13, 2, 2, 0, 9)
    assert dry.by_reason == {"poison": 6, "timeout": 3}
    assert dry.by_topic == {(orders, orders): 9}
    not_json, not_record = dry.malformed_samples
    assert (not_json.partition, not_json.offset) == (0, 7)
    assert not_json.error.startswith("not JSON: ")
    assert not_record == Malformed(1, 4, "missing field(s) ['partition', 'offset', 'value', "
                                         "'attempts', 'reason']")
    assert [(p.offset, p.attempts) for p in dry.planned_samples] == [
        (0, 4), (1, 4), (2, 5), (3, 4), (4, 4), (5, 4), (6, 4), (7, 4), (8, 4)]
    assert _values(bootstrap, orders) == []  # a dry run writes nothing...

    done = run_replay(ReplayOptions(bootstrap, failed_topic, group_id=group), spark)
    assert (done.read, done.malformed, done.duplicates, done.replayed) == (13, 2, 2, 9)
    records = asyncio.run(read_all(bootstrap, orders))
    assert sorted(r.value for r in records) == [b"v%d" % i for i in range(9)]
    by_value = {r.value: r for r in records}
    assert by_value[b"v2"].key == b"k2"
    assert list(by_value[b"v2"].headers) == list(zip(
        REPLAY_HEADERS, [orders.encode(), b"0", b"2", b"5", b"1800000000000"], strict=True))

    again = run_replay(ReplayOptions(bootstrap, failed_topic, group_id=group), spark)
    assert (again.read, again.replayed, again.spark_startup_s) == (0, 0, None)
    _produce(bootstrap, failed_topic, [failed(orders, 9).to_json()], partition=1)
    later = run_replay(ReplayOptions(bootstrap, failed_topic, group_id=group), spark)
    assert (later.read, later.replayed) == (1, 1)
    assert _values(bootstrap, orders) == [b"v%d" % i for i in range(10)]


def test_filters_and_target_topic(kafka_broker, spark) -> None:
    bootstrap = kafka_broker.bootstrap
    failed_topic, target = unique("failed"), unique("target")
    kafka_broker.create_topic_sync(failed_topic)
    kafka_broker.create_topic_sync(target)
    _produce(bootstrap, failed_topic, [
        failed("orders", 1, reason="ValueError: poison", failed_at=1_000).to_json(),
        failed("orders", 2, reason="ValueError: poison", failed_at=5_000).to_json(),
        failed("payments", 3, reason="timeout", failed_at=5_000).to_json(),
        failed("payments", 4, reason="KeyError: 'id'", failed_at=6_000).to_json(),
    ], partition=0)
    summary = run_replay(ReplayOptions(
        bootstrap, failed_topic, target_topic=target, group_id=unique("replay"),
        reasons=("poison", "KeyError"), since_ms=5_000), spark)
    assert (summary.read, summary.filtered, summary.replayed) == (4, 2, 2)
    assert summary.by_topic == {("orders", target): 1, ("payments", target): 1}
    assert _values(bootstrap, target) == [b"v2", b"v4"]


def _produce_every_fate(bootstrap: str, failed_topic: str, orders: str) -> None:
    """63 records over two partitions, with every fate among them (see the test below)."""
    later = 1_800_000_000_000
    _produce(bootstrap, failed_topic, [
        *(failed(orders, i, reason="poison").to_json() for i in range(30)),
        *(b"junk %d" % i for i in range(12)),
    ], partition=0)
    _produce(bootstrap, failed_topic, [
        # Newer copies of 0..5 win over the older ones in partition 0, the one of 5 is
        # over the attempts limit: its older copy is still a duplicate, not replayed.
        *(failed(orders, i, reason="poison", attempts=5, failed_at=later).to_json()
          for i in range(5)),
        failed(orders, 5, reason="poison", attempts=6, failed_at=later).to_json(),
        dataclasses.replace(failed(orders, 30, reason="poison"), value_truncated=True).to_json(),
        failed(orders, 31, reason="timeout").to_json(),
        *(b"junk %d" % i for i in range(12, 25)),
    ], partition=1)


def test_every_fate_counted_once_across_writing_tasks(kafka_broker, spark) -> None:
    bootstrap = kafka_broker.bootstrap
    failed_topic, orders, group = unique("failed"), unique("orders"), unique("replay")
    kafka_broker.create_topic_sync(failed_topic, partitions=2)
    kafka_broker.create_topic_sync(orders)
    _produce_every_fate(bootstrap, failed_topic, orders)
    options = ReplayOptions(bootstrap, failed_topic, group_id=group, reasons=("poison",))
    replayed = [*range(5), *range(6, 30)]

    dry = run_replay(dataclasses.replace(options, dry_run=True), spark)
    counts = (dry.read, dry.malformed, dry.duplicates, dry.over_attempts, dry.truncated,
              dry.filtered, dry.replayed)
    assert counts == (63, 25, 6, 1, 1, 1, 29)
    assert (dry.by_reason, dry.by_topic) == ({"poison": 29}, {(orders, orders): 29})
    assert [(m.partition, m.offset) for m in dry.malformed_samples] == [
        *((0, o) for o in range(30, 42)), *((1, o) for o in range(8, 16))]
    assert [(p.offset, p.attempts) for p in dry.planned_samples] == [
        (o, 5 if o < 5 else 4) for o in replayed[:20]]
    assert _values(bootstrap, orders) == []

    done = run_replay(options, spark)
    assert (done.read, done.malformed, done.duplicates, done.over_attempts, done.truncated,
            done.filtered, done.replayed) == counts
    assert (done.by_reason, done.by_topic) == (dry.by_reason, dry.by_topic)
    assert done.malformed_samples == dry.malformed_samples
    records = asyncio.run(read_all(bootstrap, orders))
    assert sorted(r.value for r in records) == sorted(b"v%d" % o for o in replayed)
    attempts = {r.value: dict(r.headers)[REPLAY_HEADERS[3]] for r in records}
    assert attempts[b"v2"] == b"5" and attempts[b"v7"] == b"4"

    # The same input in process, without Spark: the same outcome, the same records.
    in_process = dataclasses.replace(options, group_id=unique("replay"), in_process=True)
    local_dry = run_replay(dataclasses.replace(in_process, dry_run=True))
    assert local_dry.in_process and not dry.in_process
    assert _outcome(local_dry) == _outcome(dry)
    local_target = unique("orders-local")
    kafka_broker.create_topic_sync(local_target)
    local = run_replay(dataclasses.replace(in_process, target_topic=local_target))
    assert (local.spark_startup_s, local.by_topic) == (None, {(orders, local_target): 29})
    assert _outcome(local, "by_topic", "planned_samples") == _outcome(
        done, "by_topic", "planned_samples")
    written = asyncio.run(read_all(bootstrap, local_target))
    assert sorted((r.key, r.value, r.headers) for r in written) == sorted(
        (r.key, r.value, r.headers) for r in records)
    assert run_replay(dataclasses.replace(in_process, target_topic=local_target)).read == 0


def _outcome(summary: ReplaySummary, *leaving_out: str) -> dict[str, object]:
    """What a run found and did, without its timing, group and engine."""
    skip = {"group_id", "spark_startup_s", "in_process", "phases", "elapsed_s", *leaving_out}
    return {k: v for k, v in dataclasses.asdict(summary).items() if k not in skip}


def test_writes_stay_under_the_rate_limit(kafka_broker, spark) -> None:
    bootstrap = kafka_broker.bootstrap
    failed_topic, orders = unique("failed"), unique("orders")
    kafka_broker.create_topic_sync(failed_topic)
    kafka_broker.create_topic_sync(orders)
    _produce(bootstrap, failed_topic, [failed(orders, i).to_json() for i in range(40)], 0)
    # Without coalescing, both shuffle partitions get a writing task even for this little data.
    coalesce = "spark.sql.adaptive.coalescePartitions.enabled"
    spark.conf.set(coalesce, "false")
    try:
        summary = run_replay(ReplayOptions(bootstrap, failed_topic, group_id=unique("replay"),
                                           max_records_per_sec=10), spark)
    finally:
        spark.conf.unset(coalesce)
    assert summary.replayed == 40
    stamps = sorted(r.timestamp for r in asyncio.run(read_all(bootstrap, orders)))
    # Two writing tasks at 5 records per second each; one has at least 20 records, its first
    # goes at once and its 20th not before 3.8 s (at 10 per second each: 1.9 s).
    assert len(stamps) == 40
    assert stamps[-1] - stamps[0] >= 3_500
