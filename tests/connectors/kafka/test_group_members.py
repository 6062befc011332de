"""Members of one consumer group on the test broker: a join moves only the newcomer's
share, and a member that runs another topology is refused (one line, exit status 2) while
the running members go on."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, NamedTuple

from connectors.kafka import KafkaSpout
from connectors.kafka.repartition import topic_name
from engine import LocalCluster, TopologyBuilder
from engine.testing import CaptureBolt
from tests.connectors.kafka.helpers import FAST_GROUP, eventually, produce, unique
from tests.connectors.kafka.test_keyed_processes import (
    Run,
    new_count,
    wait_split,
    word_count_conf,
)
from tests.connectors.kafka.test_keyed_state_restarts import refused

TALLY = Path(__file__).with_name("tally_topology.py")


def member(bootstrap: str, source: str, group: str) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("kafka", KafkaSpout(source, bootstrap, group, commit_interval_secs=0.2,
                                          **FAST_GROUP))
    builder.set_bolt("out", CaptureBolt()).shuffle_grouping("kafka")
    return builder.create_topology()


def holding(cluster: LocalCluster, name: str) -> set[int]:
    """The partitions the member ``name`` tracks (those it read a committed offset of)."""
    tasks = cluster.stats(name)["metrics"].get("kafka", {})
    return {p["partition"] for task in tasks.values() for p in task["partitions"]}


async def test_a_join_moves_only_the_newcomers_share(kafka_broker) -> None:
    bootstrap = kafka_broker.bootstrap
    source, group = unique("in"), unique("g")
    await kafka_broker.create_topic(source, 6)
    for p in range(6):  # a record per partition: a member tracks what it read
        await produce(bootstrap, source, [(None, b"x")], partition=p)
    async with LocalCluster() as a, LocalCluster() as b, LocalCluster() as c:
        members = {"a": a, "b": b}

        async def shared(count: int) -> bool:
            held = [holding(cluster, name) for name, cluster in members.items()]
            return (all(len(h) == count for h in held)
                    and sorted(p for h in held for p in h) == list(range(6)))

        for name, cluster in members.items():
            await cluster.submit_topology(name, {}, member(bootstrap, source, group))
        await eventually(lambda: shared(3), 60, "a and b holding three partitions each")
        before = {name: holding(cluster, name) for name, cluster in members.items()}
        members["c"] = c
        await c.submit_topology("c", {}, member(bootstrap, source, group))
        await eventually(lambda: shared(2), 60, "a, b and c holding two partitions each")
        after = {name: holding(cluster, name) for name, cluster in members.items()}
    assert after["a"] <= before["a"] and after["b"] <= before["b"], (before, after)
    gone = (before["a"] - after["a"]) | (before["b"] - after["b"])
    assert len(gone) == 2 and after["c"] == gone, (before, after)  # the newcomer's share only


class Running(NamedTuple):
    """A word count member whose ``workers`` workers share every partition of ``topics``."""

    run: Run
    conf: dict[str, object]
    group: str
    topics: list[str]
    workers: int


async def running_member(kafka_broker, runs: list[Run], tmp_path: Path,
                         workers: int = 1) -> Running:
    """A new word count run as one command with ``workers`` workers, returned once they share
    the two partitions of its sentences topic (and with workers > 1 of its count hop too)."""
    bootstrap, sentences, counts, group = await new_count(kafka_broker)
    conf = word_count_conf(bootstrap, sentences, counts, group)
    extra = ("--workers", str(workers)) if workers > 1 else ()
    running = Run(tmp_path / "running.log", conf, *extra)
    runs.append(running)
    topics = [sentences, topic_name(group, "count")] if workers > 1 else [sentences]
    await wait_split([running], topics, workers, 2)
    return Running(running, conf, group, topics, workers)


async def refused_errors(runs: list[Run], newcomer: Run) -> list[str]:
    """The ERROR lines of ``newcomer``, which must be refused (exit status 2)."""
    runs.append(newcomer)
    return [line for line in await refused(newcomer) if "ERROR" in line]


async def test_a_member_with_other_workers_is_refused(kafka_broker, runs, tmp_path) -> None:
    running = await running_member(kafka_broker, runs, tmp_path, workers=2)
    odd = Run(tmp_path / "odd.log", running.conf)  # topology.workers 1
    errors = await refused_errors(runs, odd)
    assert len(errors) == 1, errors
    assert "topology.workers=1 here, 2 in the group" in errors[0], errors
    assert f"consumer group {running.group!r} runs another topology" in errors[0], errors
    await still_running(running)


async def test_a_member_of_another_topology_file_is_refused(kafka_broker, runs,
                                                            tmp_path) -> None:
    running = await running_member(kafka_broker, runs, tmp_path)
    other = Run(tmp_path / "other.log", running.conf, file=TALLY)
    errors = await refused_errors(runs, other)
    assert len(errors) == 1, errors
    assert "components differ: 'tally' only here, 'count' only in the group" in errors[0], (
        errors)
    assert "bolt 'counts': reads 'tally' here, 'count' in the group" in errors[0], errors
    await still_running(running)


async def still_running(running: Running) -> None:
    """``running`` was not refused: after the refused member left it holds every partition
    again, said why it turned the member away, and stops with status 0."""
    await wait_split([running.run], running.topics, running.workers, 2)
    text = running.run.text()
    assert "ERROR" not in text, text[-3000:]
    assert re.search(rf"WARNING connectors.kafka: consumer group {running.group!r}: \d+ "
                     rf"member\(s\) run a topology other than the group's", text), text[-3000:]
    assert running.run.stop() == 0, running.run.text()[-3000:]


async def test_a_refused_worker_stops_every_worker_of_its_command(kafka_broker, runs,
                                                                  tmp_path) -> None:
    running = await running_member(kafka_broker, runs, tmp_path)
    other = Run(tmp_path / "other.log", running.conf, "--workers", "2", file=TALLY)
    errors = await refused_errors(runs, other)
    assert any("invalid input (status 2); stopping every worker" in e for e in errors), errors
    said = [e for e in errors if "runs another topology" in e]
    assert said and all("topology.workers=2 here, 1 in the group" in e for e in said), errors
    await still_running(running)
