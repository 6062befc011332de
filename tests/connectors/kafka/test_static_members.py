"""Workers of ``--workers N`` are static members of their consumer groups: a SIGKILLed worker
restarted by the supervisor takes its own partitions back without a rebalance, so the
other worker's partitions (its input and its repartition reader's) keep committing.

The relay runs keyed (a repartition hop between its spout and its relay bolt), with a
session timeout that covers a restart; input is written all along. The group's committed
offsets are polled by a consumer of the group that never joins it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from connectors.kafka.repartition import topic_name
from tests.connectors.kafka.helpers import (
    committed_to_end,
    eventually,
    read_all,
    unique,
)
from tests.connectors.kafka.test_keyed_processes import RELAY, Run, wait_split

SESSION_MS = 10_000  # longer than a restart: the killed worker's own id comes back in time
MAX_PAUSE = 4.0  # the longest a survivor's partition may go without a commit


async def _write_all_along(bootstrap: str, topic: str, sent: list[bytes],
                           done: asyncio.Event) -> None:
    """About 160 records a second into ``topic``'s 4 partitions until ``done``, each
    partition's keys spread over every partition of the hop (a key's own partition would
    keep each hop partition fed by one input partition only)."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        i = 0
        while not done.is_set():
            batch = [await producer.send(topic, b"v%d" % (i + j), key=b"k%d" % (i + j),
                                         partition=j % 4) for j in range(8)]
            await asyncio.gather(*batch)
            sent += [b"v%d" % (i + j) for j in range(8)]
            i += 8
            await asyncio.sleep(0.05)
    finally:
        await producer.stop()


class CommitWatch:
    """When each partition's committed offset last moved, and the longest it stood still."""

    def __init__(self, bootstrap: str, group: str, tps: list[TopicPartition]) -> None:
        self._consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                                          enable_auto_commit=False)
        self.tps = tps
        self._last: dict[TopicPartition, tuple[int | None, float]] = {}
        self.longest: dict[TopicPartition, float] = dict.fromkeys(tps, 0.0)

    async def run(self, until: float) -> None:
        """Poll every 0.2 s until ``until`` (``time.monotonic``)."""
        await self._consumer.start()
        try:
            while time.monotonic() < until:
                for tp in self.tps:
                    self._see(tp, await self._consumer.committed(tp), time.monotonic())
                await asyncio.sleep(0.2)
            for tp in self.tps:  # a pause still running at the end counts too
                self._see(tp, None, time.monotonic())
        finally:
            await self._consumer.stop()

    def _see(self, tp: TopicPartition, offset: int | None, now: float) -> None:
        last = self._last.get(tp)
        if last is None or (offset is not None and offset != last[0]):
            self._last[tp] = (offset, now)
        self.longest[tp] = max(self.longest[tp], now - self._last[tp][1])


async def test_a_restarted_worker_takes_its_partitions_back_and_the_other_keeps_committing(
        kafka_broker, runs, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap
    source, sink, group = unique("in"), unique("out"), unique("g")
    hop = topic_name(group, "relay")
    await kafka_broker.create_topic(source, 4)
    await kafka_broker.create_topic(sink, 4)
    conf = {"kafka.bootstrap.servers": bootstrap, "relay.source": source, "relay.sink": sink,
            "relay.group": group, "relay.keyed": "true",
            "relay.session.timeout.ms": SESSION_MS}
    run = Run(tmp_path / "workers.log", conf, "--workers", "2", file=RELAY)
    runs.append(run)
    sent: list[bytes] = []
    done = asyncio.Event()
    writer = asyncio.create_task(_write_all_along(bootstrap, source, sent, done))
    try:
        await wait_split([run], [source, hop], 2, 4)
        held = run.holdings()[f"{run.log.name}:0"]
        survivor = [TopicPartition(t, p) for t in (source, hop) for p in sorted(held[t])]
        watch = CommitWatch(bootstrap, group, survivor)
        watching = asyncio.create_task(watch.run(time.monotonic() + 14))
        await asyncio.sleep(2)  # the watch sees them commit before the kill
        os.kill(dict(run.workers())[1], signal.SIGKILL)  # the worker, not the supervisor
        await eventually(lambda: _restarted(run), 20, "worker 1 restarted")
        await watching
    finally:
        done.set()
        await writer
    paused = {f"{tp.topic}[{tp.partition}]": round(s, 1) for tp, s in watch.longest.items()}
    assert max(paused.values()) <= MAX_PAUSE, (paused, run.text()[-5000:])

    async def all_committed() -> bool:
        return await committed_to_end(bootstrap, group, [source, hop])

    await eventually(all_committed, 40, "every input and hop record committed")
    written = {r.value for r in await read_all(bootstrap, sink)}
    assert set(sent) <= written, len(set(sent) - written)  # not under the truth
    assert run.stop() == 0, run.text()[-3000:]
    assert "Kafka broker unreachable" not in run.text()


async def _restarted(run: Run) -> bool:
    return [i for i, _ in run.workers()].count(1) == 2
