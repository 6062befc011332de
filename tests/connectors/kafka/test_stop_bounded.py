"""A stop is over by its drain time, even when the broker stops answering: the final commit
and leaving the consumer group (a LeaveGroup can go unanswered, and aiokafka waits
``request_timeout_ms``, 40 s by default, for it) are cut at the stop's deadline, with one
WARNING and no traceback."""

from __future__ import annotations

import asyncio
import logging
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from connectors.kafka import KafkaBolt, KafkaSpout
from connectors.kafka.testing_broker import TestingBroker
from engine import Config, LocalCluster, TopologyBuilder
from engine.runtime import CLOSE_GRACE_SECS
from tests.connectors.kafka.helpers import FAST_GROUP, Slow, eventually, produce, unique
from tests.connectors.kafka.netfault import linked_broker, split_topics


async def test_a_stop_with_the_source_broker_gone_silent_ends_by_its_deadline(
        kafka_broker: TestingBroker, caplog: Any) -> None:
    caplog.set_level(logging.INFO)
    async with linked_broker() as (link, source_broker):
        bootstrap, source, sink, group = await split_topics(link, source_broker, kafka_broker,
                                                            2000)
        builder = TopologyBuilder()
        builder.set_spout("kafka", KafkaSpout(source, bootstrap, group, **FAST_GROUP))
        builder.set_bolt("slow", Slow(0.001)).shuffle_grouping("kafka")
        builder.set_bolt("out", KafkaBolt(sink, kafka_broker.bootstrap, key_field="key",
                                          value_field="value")).shuffle_grouping("slow")
        conf = Config()
        conf.set_max_spout_pending(50)
        async with LocalCluster() as cluster:
            await cluster.submit_topology("stop", conf, builder.create_topology())

            async def flowing() -> bool:
                return cluster.stats("stop")["components"]["kafka"]["acked"] >= 20

            await eventually(flowing, 30, "records flowing")
            link.blackhole()  # commits and the LeaveGroup now go unanswered
            drain = 1.0
            start = time.monotonic()
            await asyncio.wait_for(cluster.kill_topology("stop", wait_secs=drain), 30)
            took = time.monotonic() - start
            link.heal()
    assert took < drain + CLOSE_GRACE_SECS + 2.0, f"the stop took {took:.1f} s"
    traced = [r.getMessage() for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert not traced, traced
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING
              and r.name == "connectors.kafka"]
    assert any("KafkaSpout 'kafka'" in m and "closed its connections" in m
               for m in warned), warned


REPO = Path(__file__).resolve().parents[3]
RELAY = REPO / "tests" / "connectors" / "kafka" / "relay_topology.py"


def start_member(log: Path, bootstrap: str, source: str, sink: str, group: str,
                 drain: float) -> subprocess.Popen[bytes]:
    """One ``python -m engine run`` of the relay topology in ``group``."""
    args = [sys.executable, "-m", "engine", "run", str(RELAY), "--status-interval", "1",
            "--drain-secs", str(drain)]
    conf = {"kafka.bootstrap.servers": bootstrap, "relay.source": source,
            "relay.sink": sink, "relay.group": group, "relay.delay.secs": 0.002}
    for key, value in conf.items():
        args += ["--conf", f"{key}={value}"]
    with log.open("wb") as out:
        return subprocess.Popen(args, cwd=REPO, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)


async def stop_a_member(bootstrap: str, create: Any, tmp_path: Path,
                        before_stop: Any) -> tuple[int, float, str]:
    """Two relay processes in one group; ``before_stop()`` once a rebalance is under way
    in the first, then SIGTERM to it: its exit status, stop time and log."""
    source, sink, group = unique("in"), unique("out"), unique("g")
    await create(source, 4)
    await create(sink, 4)
    await produce(bootstrap, source, [(b"k%d" % i, b"v%d" % i) for i in range(20_000)])
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    members = [start_member(logs[0], bootstrap, source, sink, group, DRAIN)]
    try:
        async def logged(log: Path, text: str) -> bool:
            return text in log.read_text(errors="replace")

        await eventually(lambda: logged(logs[0], "partitions assigned"), 60, "a assigned")
        members.append(start_member(logs[1], bootstrap, source, sink, group, DRAIN))
        await eventually(lambda: logged(logs[0], "partitions revoked"), 60,
                         "a rebalance under way")
        before_stop()
        start = time.monotonic()
        members[0].send_signal(signal.SIGTERM)
        status = await asyncio.to_thread(members[0].wait, 60)
        took = time.monotonic() - start
    finally:
        for member in members:
            if member.poll() is None:
                member.kill()
                member.wait(10)
    return status, took, logs[0].read_text(errors="replace")


DRAIN = 2.0


async def test_a_group_member_stopped_during_a_rebalance_stops_quietly_by_its_drain_time(
        kafka_broker: TestingBroker, tmp_path: Path) -> None:
    status, took, text = await stop_a_member(kafka_broker.bootstrap, kafka_broker.create_topic,
                                             tmp_path, lambda: None)
    assert status == 0, text[-3000:]
    assert "Traceback" not in text and " ERROR " not in text, text[-3000:]
    # The drain, CLOSE_GRACE_SECS more for the closes at most, and the interpreter's exit.
    assert took < DRAIN + CLOSE_GRACE_SECS + 4.0, f"stop took {took:.1f} s\n{text[-3000:]}"
    print(f"group member stop, healthy broker: {took:.2f} s (--drain-secs {DRAIN:g})")


async def test_a_group_member_whose_broker_went_silent_stops_by_its_drain_time(
        tmp_path: Path) -> None:
    async with linked_broker() as (link, broker):
        status, took, text = await stop_a_member(f"127.0.0.1:{link.port}",
                                                 broker.create_topic, tmp_path, link.blackhole)
        link.heal()
    assert status == 0, text[-3000:]
    assert "Traceback" not in text, text[-3000:]
    assert "closed its connections without it" in text, text[-3000:]
    assert took < DRAIN + CLOSE_GRACE_SECS + 4.0, f"stop took {took:.1f} s\n{text[-3000:]}"
    print(f"group member stop, broker silent: {took:.2f} s (--drain-secs {DRAIN:g})")
