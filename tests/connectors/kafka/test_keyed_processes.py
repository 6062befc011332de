"""Keyed work across engine processes on the test broker: the fields grouping of
``topologies/kafka_word_count.py`` goes through a repartition topic when
``topology.workers`` > 1, so every word's count is whole in one process.

Processes are started by the CLI (``python -m engine run``). The input is written once
every member holds its partitions: the word count keeps its counts in memory, which a
rebalance in the middle of the stream would restart (docs/scaling.md).
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

from connectors.kafka.repartition import topic_name
from tests.connectors.kafka.helpers import (
    committed_rows,
    committed_to_end,
    eventually,
    produce,
    read_all,
    unique,
)
from tests.engine.test_supervisor import Supervised

REPO = Path(__file__).resolve().parents[3]
WORD_COUNT = REPO / "topologies" / "kafka_word_count.py"
RELAY = REPO / "tests" / "connectors" / "kafka" / "relay_topology.py"
_ASSIGNED = re.compile(r"(?:\[worker (\d+)\] )?\S+ connectors\.kafka: partitions (assigned|"
                       r"revoked): (.*)")
_TP = re.compile(r"topic='([^']+)', partition=(\d+)")
WORDS = [f"w{i:02d}" for i in range(40)]


class Run(Supervised):
    """One ``python -m engine run`` of the Kafka word count (or ``file``), output in a log
    file."""

    def __init__(self, log: Path, conf: dict[str, object], *extra: str,
                 file: Path = WORD_COUNT) -> None:
        self.log = log
        args = [sys.executable, "-m", "engine", "run", str(file), "--status-interval", "1",
                *extra]
        for key, value in conf.items():
            args += ["--conf", f"{key}={value}"]
        with log.open("wb") as out:
            self.proc = subprocess.Popen(args, cwd=REPO, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=dict(os.environ))

    def holdings(self) -> dict[str, dict[str, set[int]]]:
        """``{member: {topic: partitions}}`` from the rebalance log lines (a member is a
        worker index under a supervisor, else this process)."""
        held: dict[str, dict[str, set[int]]] = {}
        for line in self.text().splitlines():
            m = _ASSIGNED.search(line)
            if m is None:
                continue
            member = held.setdefault(f"{self.log.name}:{m.group(1)}", {})
            for topic, partition in _TP.findall(m.group(3)):
                parts = member.setdefault(topic, set())
                (parts.add if m.group(2) == "assigned" else parts.discard)(int(partition))
        return held



def word_count_conf(bootstrap: str, sentences: str, counts: str, group: str,
                    **more: object) -> dict[str, object]:
    return {"kafka.bootstrap.servers": bootstrap, "kafka.sentences.topic": sentences,
            "kafka.counts.topic": counts, "kafka.group.id": group,
            "kafka.consumer.session_timeout_ms": 2000,
            "kafka.consumer.heartbeat_interval_ms": 250,
            "kafka.commit.interval.secs": 0.5, **more}


async def new_count(kafka_broker) -> tuple[str, str, str, str]:
    """The broker's address, and a new word count's sentences and counts topics (2
    partitions each) and group."""
    sentences, counts, group = unique("sentences"), unique("counts"), unique("g")
    await kafka_broker.create_topic(sentences, 2)
    await kafka_broker.create_topic(counts, 2)
    return kafka_broker.bootstrap, sentences, counts, group


def sentences_of(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(8)) for _ in range(n)]


async def wait_split(runs: list[Run], topics: list[str], members: int, partitions: int,
                     timeout: float = 60) -> None:
    """Until ``members`` members each hold part of every one of ``topics``, together all."""

    async def split() -> bool:
        held = {m: t for run in runs for m, t in run.holdings().items()}
        for topic in topics:
            owners = [t.get(topic, set()) for t in held.values()]
            if sum(1 for o in owners if o) != members:
                return False
            if sorted(p for o in owners for p in o) != list(range(partitions)):
                return False
        return True

    try:
        await eventually(split, timeout, f"{members} members sharing {topics}")
    except AssertionError as exc:
        logs = "\n".join(f"--- {r.log.name}\n{r.text()[-4000:]}" for r in runs)
        raise AssertionError(f"{exc}\n{logs}") from None


async def last_counts(bootstrap: str, counts: str) -> dict[str, int]:
    """The last count written per word (a word's counts share one partition, in order)."""
    last: dict[str, tuple[int, int]] = {}
    for record in await read_all(bootstrap, counts):
        word = record.key.decode()
        if word not in last or record.offset > last[word][0]:
            last[word] = (record.offset, int(record.value))
    return {word: count for word, (_, count) in last.items()}


async def counts_not_under(bootstrap: str, counts: str, truth: Counter[str]) -> dict[str, int]:
    """Every word's last count, checked to be at least its truth (at least once)."""
    got = await last_counts(bootstrap, counts)
    under = {w: (got.get(w), c) for w, c in truth.items() if got.get(w, 0) < c}
    assert not under, f"counts under the truth: {under}"
    return got


async def wait_truth(bootstrap: str, counts: str, truth: Counter[str], runs: list[Run],
                     timeout: float = 90) -> None:
    async def whole() -> bool:
        return await last_counts(bootstrap, counts) == truth

    try:
        await eventually(whole, timeout, "the last count of every word to be the truth")
    except AssertionError as exc:
        got = await last_counts(bootstrap, counts)
        wrong = {w: (got.get(w), c) for w, c in truth.items() if got.get(w) != c}
        logs = "\n".join(f"--- {r.log.name}\n{r.text()[-3000:]}" for r in runs)
        raise AssertionError(f"{exc}: (got, truth) {dict(list(wrong.items())[:8])}\n"
                             f"{logs}") from None


async def keyed_run(kafka_broker, runs: list[Run], tmp_path: Path, start,
                    **more: object) -> None:
    """Start the word count with ``start(conf)`` (``more`` added to the conf), write the
    input once the members share both topics, and check that every word's last count is
    exactly the truth."""
    bootstrap, sentences, counts, group = await new_count(kafka_broker)
    conf = word_count_conf(bootstrap, sentences, counts, group, **more)
    start(conf)
    await wait_split(runs, [sentences, topic_name(group, "count")], 2, 2)
    lines = sentences_of(1500)
    await produce(bootstrap, sentences, [(None, line.encode()) for line in lines])
    truth = Counter(word for line in lines for word in line.split())
    await wait_truth(bootstrap, counts, truth, runs)
    for run in runs:
        assert run.stop() == 0, run.text()[-3000:]
    assert await last_counts(bootstrap, counts) == truth  # nothing more after the drain


async def test_word_count_under_workers_2_is_exact(kafka_broker, runs, tmp_path) -> None:
    def start(conf: dict[str, object]) -> None:
        runs.append(Run(tmp_path / "workers.log", conf, "--workers", "2"))

    await keyed_run(kafka_broker, runs, tmp_path, start)


async def test_word_count_as_two_hosts_is_exact(kafka_broker, runs, tmp_path) -> None:
    def start(conf: dict[str, object]) -> None:
        for name in ("a", "b"):
            runs.append(Run(tmp_path / f"{name}.log", {**conf, "topology.workers": 2}))

    await keyed_run(kafka_broker, runs, tmp_path, start)


async def refusal(run: Run) -> str:
    """The first error line of ``run``, which must exit with status 2 within a minute."""
    try:
        code = await asyncio.to_thread(run.proc.wait, 60)
    finally:
        if run.proc.poll() is None:
            run.proc.kill()
    errors = [line for line in run.text().splitlines() if "error:" in line]
    assert code == 2, run.text()[-3000:]
    assert errors, run.text()[-3000:]
    return errors[0]


async def test_repartition_topic_with_other_partition_count_is_refused(
        kafka_broker, tmp_path) -> None:
    bootstrap, sentences, counts, group = await new_count(kafka_broker)
    await kafka_broker.create_topic(topic_name(group, "count"), 3)
    conf = word_count_conf(bootstrap, sentences, counts, group)
    line = await refusal(Run(tmp_path / "refused.log", conf, "--workers", "2"))
    assert f"{topic_name(group, 'count')!r} has 3 partitions" in line, line
    assert f"its input {sentences} has 2" in line, line


async def test_member_not_alone_with_one_worker_logs_split_results(kafka_broker, runs,
                                                                   tmp_path) -> None:
    bootstrap, sentences, counts, group = await new_count(kafka_broker)
    conf = word_count_conf(bootstrap, sentences, counts, group)
    for name in ("a", "b"):
        runs.append(Run(tmp_path / f"{name}.log", conf))
    await wait_split(runs, [sentences], 2, 2)

    async def logged() -> bool:
        return all("keyed results are split" in r.text() for r in runs)

    await eventually(logged, 30, "each member to say its keyed results are split")
    for run in runs:
        lines = [x for x in run.text().splitlines() if "keyed results are split" in x]
        assert len(lines) == 1 and lines[0].startswith("ERROR"), lines
        assert "topology.workers" in lines[0], lines[0]
        assert run.stop() == 0


async def test_a_killed_member_loses_nothing_across_the_hop(kafka_broker, runs,
                                                            tmp_path) -> None:
    """Keyed relay in two processes (topology.workers=2); one is SIGKILLed mid-stream: the
    survivor takes over both topics' partitions and every input reaches the sink."""
    bootstrap = kafka_broker.bootstrap
    source, sink, group = unique("in"), unique("out"), unique("g")
    await kafka_broker.create_topic(source, 4)
    await kafka_broker.create_topic(sink, 4)
    n = 3000
    await produce(bootstrap, source, [(f"k{i % 97}".encode(), f"r{i}".encode())
                                      for i in range(n)])
    conf = {"kafka.bootstrap.servers": bootstrap, "relay.source": source, "relay.sink": sink,
            "relay.group": group, "relay.delay.secs": 0.005, "relay.keyed": "true",
            "topology.workers": 2}
    hop = topic_name(group, "relay")
    a, b = (Run(tmp_path / f"{name}.log", conf, file=RELAY) for name in ("a", "b"))
    runs += [a, b]
    await wait_split(runs, [source, hop], 2, 4)

    async def some_relayed() -> bool:
        return await committed_rows(bootstrap, group, hop) >= n // 5

    await eventually(some_relayed, 60, "a fifth of the records relayed")
    a.proc.kill()
    a.proc.wait(10)
    assert await committed_rows(bootstrap, group, hop) < n, "killed too late to test a takeover"

    try:
        await eventually(
            lambda: committed_to_end(bootstrap, group, [source, hop]), 90,
            "the survivor to commit both topics to the end")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{b.text()[-4000:]}") from None
    assert b.stop() == 0, b.text()[-3000:]
    copies = Counter(r.value for r in await read_all(bootstrap, sink))
    missing = {f"r{i}".encode() for i in range(n)} - set(copies)
    assert not missing, f"{len(missing)} inputs never reached the sink, e.g. {sorted(missing)[:5]}"
