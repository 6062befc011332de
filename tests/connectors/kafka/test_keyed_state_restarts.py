"""Keyed state across restarts on the test broker: a host started again with its state
directory reads only what changed since its last checkpoint; state that is gone and a
changelog record that cannot be read are refused with one line and exit status 2, never
restored as empty or retried forever."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from connectors.kafka.changelog import ChangelogWriter, changelog_name, ensure_changelog
from connectors.kafka.repartition import topic_name
from engine.murmur2 import default_partition
from engine.state.changelog import encode_changes, encode_marker, encode_start
from tests.connectors.kafka.helpers import (
    committed_rows,
    committed_to_end,
    eventually,
    high_watermarks,
    produce,
)
from tests.connectors.kafka.test_keyed_processes import (
    WORDS,
    Run,
    counts_not_under,
    new_count,
    sentences_of,
    wait_split,
    wait_truth,
    word_count_conf,
)
from tests.connectors.kafka.test_keyed_state_processes import STATEFUL

SEEDED = 20_000  # changelog records per partition before the first run


async def seed(kafka_broker, group: str, sentences: str) -> str:
    """A group that already counted: one hop record per partition committed past, and a
    changelog of ``SEEDED`` keys per partition; returns the changelog topic."""
    bootstrap = kafka_broker.bootstrap
    hop = topic_name(group, "count")
    await kafka_broker.create_topic(hop, 2, {"cleanup.policy": "delete", "retention.ms": "-1"})
    for p in (0, 1):
        await produce(bootstrap, hop, [(b"x", b"\x90")], partition=p)
    member = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                              enable_auto_commit=False)
    await member.start()
    try:
        member.assign([TopicPartition(hop, p) for p in (0, 1)])
        await member.commit({TopicPartition(hop, p): 1 for p in (0, 1)})
    finally:
        await member.stop()
    changelog = changelog_name(group, "count")
    await ensure_changelog(bootstrap, {}, [sentences], changelog)
    writer = ChangelogWriter(changelog, bootstrap, {})
    await writer.start()
    try:
        await writer.write({p: [encode_start(1), *encode_changes(
            {f"old{p}-{i}": i for i in range(SEEDED)}, 0), encode_marker(1, 1)]
            for p in (0, 1)})
    finally:
        await writer.stop()
    return changelog


def restores(run: Run) -> list[tuple[int, str]]:
    """``(records read, how)`` of each partition restore ``run`` logged."""
    out = []
    for line in run.text().splitlines():
        if "changelog records in" in line:
            read = int(line.split("restored: ")[1].split(" ")[0])
            out.append((read, "delta" if "past the state this host held" in line else "full"))
    return out


async def test_a_host_killed_and_started_again_reads_only_what_changed(
        kafka_broker, runs, tmp_path: Path) -> None:
    bootstrap, sentences, counts, group = await new_count(kafka_broker)
    changelog = await seed(kafka_broker, group, sentences)
    hop = topic_name(group, "count")
    conf = word_count_conf(bootstrap, sentences, counts, group,
                           **{"topology.state.checkpoint.interval.ms": 200,
                              "topology.workers": 2, "topology.state.dir": tmp_path})
    first = Run(tmp_path / "first.log", conf, file=STATEFUL)
    runs.append(first)
    lines = sentences_of(12000)
    await produce(bootstrap, sentences, [(None, line.encode()) for line in lines])

    async def counting() -> bool:
        return await committed_rows(bootstrap, group, hop) > 1000

    await eventually(counting, 90, "some words counted and committed")
    first.proc.kill()
    first.proc.wait(10)
    assert not await committed_to_end(bootstrap, group, [sentences, hop]), (
        "killed too late to test a restart")
    # A rebalance while the host's two workers join restores a partition once more: from
    # the state the host holds then (a delta). Each partition's first restore reads it all.
    assert [how for _, how in restores(first)].count("full") == 2, first.text()[-3000:]
    size = sum((await high_watermarks(bootstrap, changelog)).values())
    again = Run(tmp_path / "again.log", conf, file=STATEFUL)
    runs.append(again)
    await eventually(lambda: committed_to_end(bootstrap, group, [sentences, hop]), 120,
                     "the restarted host to commit both topics to the end")
    assert again.stop() == 0, again.text()[-3000:]
    got = restores(again)
    assert len(got) >= 2 and {how for _, how in got} == {"delta"}, again.text()[-3000:]
    read = sum(n for n, _ in got)
    assert read <= 0.05 * size, (read, size, again.text()[-3000:])
    truth = Counter(word for line in lines for word in line.split())
    await counts_not_under(bootstrap, counts, truth)


async def counted_once(kafka_broker, runs, tmp_path: Path) -> tuple[dict[str, object], str]:
    """A stateful count of 600 sentences run to the truth and stopped; its conf and
    changelog topic."""
    bootstrap, sentences, counts, group = await new_count(kafka_broker)
    conf = word_count_conf(bootstrap, sentences, counts, group,
                           **{"topology.state.checkpoint.interval.ms": 200,
                              "topology.workers": 2})
    run = Run(tmp_path / "first.log", {**conf, "topology.state.dir": tmp_path / "a"},
              file=STATEFUL)
    runs.append(run)
    lines = sentences_of(600)
    await produce(bootstrap, sentences, [(None, line.encode()) for line in lines])
    await wait_truth(bootstrap, counts, Counter(w for line in lines for w in line.split()),
                     runs)
    await eventually(lambda: committed_to_end(bootstrap, group,
                                              [sentences, topic_name(group, "count")]),
                     60, "every offset committed")
    assert run.stop() == 0, run.text()[-3000:]
    return conf, changelog_name(group, "count")


async def refused(run: Run) -> list[str]:
    """The lines of ``run`` that say why it was refused; it must exit with status 2."""
    try:
        code = await asyncio.to_thread(run.proc.wait, 90)
    finally:
        if run.proc.poll() is None:
            run.proc.kill()
    assert code == 2, run.text()[-3000:]
    return [line for line in run.text().splitlines()
            if "refused" in line or "error:" in line or "ERROR" in line]


async def test_a_deleted_changelog_is_refused_at_start(kafka_broker, runs,
                                                      tmp_path: Path) -> None:
    conf, changelog = await counted_once(kafka_broker, runs, tmp_path)
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_broker.bootstrap)
    await admin.start()
    try:
        await admin.delete_topics([changelog])
    finally:
        await admin.close()
    # Another host (its own state directory): nothing of the state is left anywhere.
    again = Run(tmp_path / "again.log", {**conf, "topology.state.dir": tmp_path / "b"},
                file=STATEFUL)
    runs.append(again)
    lines = await refused(again)
    assert len(lines) == 1, lines
    assert f"changelog {changelog!r} does not exist" in lines[0], lines
    assert "topology.state.allow.empty=true" in lines[0], lines


async def test_an_unreadable_changelog_record_is_named_once(kafka_broker, runs,
                                                           tmp_path: Path) -> None:
    conf, changelog = await counted_once(kafka_broker, runs, tmp_path)
    word = WORDS[3]
    partition = default_partition(word.encode(), [0, 1], [0, 1])
    writer = ChangelogWriter(changelog, kafka_broker.bootstrap, {})
    await writer.start()
    try:
        end = await writer.write({partition: [(b'"%s"' % word.encode(), b"xyz")]})
    finally:
        await writer.stop()
    again = Run(tmp_path / "again.log", {**conf, "topology.state.dir": tmp_path / "b"},
                file=STATEFUL)
    runs.append(again)
    lines = await refused(again)
    errors = [line for line in lines if "ERROR" in line]
    assert len(errors) == 1, lines
    where = f"changelog {changelog!r} partition {partition} offset {end[partition] - 1}"
    assert where in errors[0] and f'\'"{word}"\'' in errors[0] and "xyz" in errors[0], lines
    assert again.text().count("restore of partition") == 0, again.text()[-3000:]


async def test_a_standby_copy_makes_a_failover_read_only_the_last_records(
        kafka_broker, runs, tmp_path: Path) -> None:
    """Two hosts with ``topology.state.standby.replicas=1``: each follows the changelog of
    the partitions the other owns. One is SIGKILLed: the survivor takes over its standby
    copies and reads only what they had not caught up with, not the 20,000 keys each."""
    bootstrap, sentences, counts, group = await new_count(kafka_broker)
    await seed(kafka_broker, group, sentences)
    hop = topic_name(group, "count")
    conf = word_count_conf(bootstrap, sentences, counts, group,
                           **{"topology.state.checkpoint.interval.ms": 200,
                              "topology.workers": 2, "topology.state.standby.replicas": 1})
    a, b = (Run(tmp_path / f"{n}.log", {**conf, "topology.state.dir": tmp_path / n},
                file=STATEFUL) for n in ("a", "b"))
    runs += [a, b]
    await wait_split(runs, [sentences, hop], 2, 2)
    lines = sentences_of(4000)
    await produce(bootstrap, sentences, [(None, line.encode()) for line in lines])

    async def counting() -> bool:
        return await committed_rows(bootstrap, group, hop) > 1000

    await eventually(counting, 90, "some words counted and committed")
    await asyncio.sleep(1.0)  # the standby copies catch up with the last checkpoints
    before = len(restores(b))
    a.proc.kill()
    a.proc.wait(10)
    more = sentences_of(2000, seed=11)  # in every partition: the survivor must take over
    await produce(bootstrap, sentences, [(None, line.encode()) for line in more])
    lines += more
    await eventually(lambda: committed_to_end(bootstrap, group, [sentences, hop]), 120,
                     "the survivor to commit both topics to the end")
    assert b.stop() == 0, b.text()[-3000:]
    taken = restores(b)[before:]
    assert taken and all(n <= 10_000 for n, _ in taken), (taken, b.text()[-3000:])
    assert "taking over its standby copy" in b.text(), b.text()[-3000:]
    truth = Counter(word for line in lines for word in line.split())
    await counts_not_under(bootstrap, counts, truth)


async def test_a_join_and_a_leave_restore_nothing_for_partitions_that_stay(
        kafka_broker, runs, tmp_path: Path) -> None:
    """Host A holds both partitions of a state seeded with 20,000 keys each; B joins, then
    leaves. The partition A keeps through the join is read again from where A stood (no
    record), and at the leave A reads of the partition it gets back only what B wrote."""
    bootstrap, sentences, counts, group = await new_count(kafka_broker)
    await seed(kafka_broker, group, sentences)
    hop = topic_name(group, "count")
    conf = word_count_conf(bootstrap, sentences, counts, group,
                           **{"topology.state.checkpoint.interval.ms": 200,
                              "topology.workers": 2})
    a = Run(tmp_path / "a.log", {**conf, "topology.state.dir": tmp_path / "a"}, file=STATEFUL)
    runs.append(a)
    await wait_split([a], [sentences, hop], 1, 2)
    lines = sentences_of(1000)
    await produce(bootstrap, sentences, [(None, line.encode()) for line in lines])
    await eventually(lambda: committed_to_end(bootstrap, group, [sentences, hop]), 90,
                     "host A to count everything")
    alone = len(restores(a))
    b = Run(tmp_path / "b.log", {**conf, "topology.state.dir": tmp_path / "b"}, file=STATEFUL)
    runs.append(b)
    await wait_split([a, b], [sentences, hop], 2, 2)
    more = sentences_of(1000, seed=3)
    await produce(bootstrap, sentences, [(None, line.encode()) for line in more])
    await eventually(lambda: committed_to_end(bootstrap, group, [sentences, hop]), 90,
                     "both hosts to count everything")
    await eventually(lambda: asyncio.sleep(0, len(restores(a)) > alone), 60,
                     "host A to restore what it kept")
    joined = restores(a)[alone:]
    assert joined and all(n == 0 and how == "delta" for n, how in joined), joined
    assert b.stop() == 0, b.text()[-3000:]
    await wait_split([a], [sentences, hop], 1, 2)

    async def restored_again() -> bool:
        return len(restores(a)) >= alone + len(joined) + 2

    await eventually(restored_again, 60, "host A to restore both partitions again")
    left = restores(a)[alone + len(joined):]
    assert left and all(how == "delta" for _, how in left), left
    assert sum(n for n, _ in left) < 2_000, left  # what B wrote, not the 20,000 keys
    lines += more
    assert a.stop() == 0, a.text()[-3000:]
    truth = Counter(word for line in lines for word in line.split())
    await counts_not_under(bootstrap, counts, truth)
