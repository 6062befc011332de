"""What each membership change costs the keyed stateful word count, under a steady input.

    python scripts/bench_membership.py [--keys 1000000] [--partitions 4] [--rate 2000]
                                       [--sentence-words 2] [--vocabulary 200]
                                       [--pythonpath DIR] [--repo DIR] [--keep-logs DIR]

It starts the Tansu test broker, creates the sentences and counts topics (``--partitions``
each) and runs ``topologies/stateful_word_count.py`` by the CLI (``python -m engine run``)
with the test broker's fast group joins. Each "host" is a process (or a supervisor with its
workers) with its own ``topology.state.dir``; ``--pythonpath DIR`` is the child processes'
``PYTHONPATH`` and the topology file comes from ``--repo`` (default: ``--pythonpath``, else
this checkout), so one script measures another checkout of the code.

Setup: ``--keys`` distinct words (``k0000000`` …, 100 per sentence) are counted through
the topology once by host A alone (``topology.workers=2``), so the changelog holds that
many keys; the seconds until the counts topic has a count for every key are printed. Then
a producer writes ``--rate`` sentences per second of ``--sentence-words`` words from a
``--vocabulary`` of words, and the changes are made one after the other:

1. join: host A alone, host B starts (``topology.workers=2`` on both);
2. leave: host B stops with SIGTERM;
3. worker SIGKILL: host A stops; one process runs ``--workers 2`` with A's state
   directory; once it settled, one worker is SIGKILLed and its supervisor restarts it;
4. host restart: the supervisor stops; host A runs alone again, is SIGKILLed once settled
   and started again at once with the same state directory.

A change's window runs from the action until every partition of the input topic and of
the count's repartition topic has its owner again, and each partition's committed offset
reached its topic's end as of that moment. Per change:

- records restored: the sum of the changelog records of every ``partition N restored``
  line logged in the window;
- the longest stand-still: the group's committed offsets are polled every 100 ms by a
  consumer of the group that never joins it; a partition stands still while its committed
  offset does not advance and its topic has records beyond it. The count's state is kept
  per partition of the repartition topic (its "state partitions"), whose offsets are
  committed after the checkpoint covering them: that is where a restore shows. An input
  partition's offset is committed once its sentence's words were written to the
  repartition topic. Partitions that moved (another owner after the change than before
  it, or an owner that was killed) and those that did not are reported apart, from the
  processes' ``partitions assigned/revoked`` lines. A first row measures the same over ten
  seconds with no change: the floor the other rows stand on (commits every 0.5 s,
  checkpoints every second).

The over-count: after (3) and again after (4) the input pauses until everything is
committed and the counts topic is read to its end; each word's last count minus its truth,
summed, is what that SIGKILL counted twice (the row of (4) is the increase after (3)).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parent.parent
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

# The imports below need the path set above.
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition  # noqa: E402
from benchlib import create_kept_topics, run_loop  # noqa: E402

from connectors.kafka.testing_broker import TestingBroker  # noqa: E402

FAST = {"kafka.consumer.session_timeout_ms": 2000, "kafka.consumer.heartbeat_interval_ms": 250,
        "kafka.commit.interval.secs": 0.5}
SEED_WORDS = 100  # distinct words per seeding sentence
POLL_SECS = 0.1
SETTLE_TIMEOUT = 300.0
_ASSIGNED = re.compile(r"(?:\[worker (\d+)\] )?\S+ connectors\.kafka: partitions (assigned|"
                       r"revoked): (.*)")
_TP = re.compile(r"topic='([^']+)', partition=(\d+)")
_RESTORED = re.compile(r"(?:\[worker (\d+)\] )?.*partition (\d+) restored: (\d+) changelog "
                       r"records in ([\d.]+) s")


class Host:
    """One ``python -m engine run`` of the topology; every output line kept with the
    monotonic time it was read, and written to ``log``."""

    def __init__(self, name: str, log: Path, cmd: list[str], env: dict[str, str],
                 cwd: Path) -> None:
        self.name = name
        self.lines: list[tuple[float, str]] = []
        self.killed: list[tuple[float, str]] = []  # (time, member) of each SIGKILL
        self.gone: list[tuple[float, str]] = []  # (time, member) of each exit or SIGKILL
        self.out = log.open("a", buffering=1)
        self.proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     text=True, bufsize=1)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append((time.monotonic(), line.rstrip("\n")))
            self.out.write(line)
        self.out.flush()

    def member(self, worker: str | None) -> str:
        """The member a log line of ``worker`` (None: this process itself) speaks for."""
        return f"{self.name}:{worker}" if worker else self.name

    def kill(self) -> None:
        """SIGKILL this process (its members' partitions go without a revoke)."""
        self.killed.append((time.monotonic(), self.name))
        self.proc.kill()
        self.proc.wait(30)
        self.gone.append((time.monotonic(), self.name))

    def kill_worker(self, index: int) -> int:
        """SIGKILL worker ``index`` (its supervisor restarts it); returns its pid."""
        pid = worker_pids(self.proc.pid)[index]
        self.killed.append((time.monotonic(), self.member(str(index))))
        self.gone.append((time.monotonic(), self.member(str(index))))
        os.kill(pid, signal.SIGKILL)
        return pid

    def stop(self) -> int:
        """SIGTERM, then wait for the exit (a drain and a last checkpoint)."""
        self.proc.terminate()
        code = self.proc.wait(120)
        self.gone.append((time.monotonic(), self.name))
        self.reader.join(10)
        return code


def worker_pids(supervisor: int) -> list[int]:
    """The supervisor's worker processes, oldest first (``--workers N`` starts them in
    index order)."""
    out = subprocess.run(["ps", "--ppid", str(supervisor), "-o", "pid=,lstart=,args="],
                         capture_output=True, text=True, check=False).stdout
    pids = []
    for line in out.splitlines():
        if "engine" in line:
            pids.append(int(line.split()[0]))
    return sorted(pids)


@dataclass
class Cluster:
    """The hosts of one run, their shared conf and where they come from."""

    bootstrap: str
    topic: str
    counts: str
    group: str
    partitions: int
    topology: Path
    cwd: Path
    env: dict[str, str]
    tmp: Path
    hosts: list[Host] = field(default_factory=list)

    def start(self, name: str, state: str, *extra: str, **conf: object) -> Host:
        """Start host ``name`` with its state directory ``state``."""
        full = {"kafka.bootstrap.servers": self.bootstrap, "kafka.sentences.topic": self.topic,
                "kafka.counts.topic": self.counts, "kafka.group.id": self.group,
                "kafka.consumer.auto_offset_reset": "earliest",
                "topology.state.dir": str(self.tmp / state), **FAST, **conf}
        cmd = [sys.executable, "-m", "engine", "run", str(self.topology), *extra]
        for key, value in full.items():
            cmd += ["--conf", f"{key}={value}"]
        host = Host(name, self.tmp / f"{name}.log", cmd, self.env, self.cwd)
        self.hosts.append(host)
        return host

    @property
    def topics(self) -> list[str]:
        """The input topic and the repartition topic the count's state is partitioned by."""
        return [self.topic, f"{self.group}-count-repartition"]

    def events(self, topic: str) -> list[tuple[float, str, str, set[int]]]:
        """``(time, member, assigned|revoked|gone, partitions of topic)``, in time order."""
        out: list[tuple[float, str, str, set[int]]] = []
        for host in self.hosts:
            for at, line in list(host.lines):
                m = _ASSIGNED.search(line)
                if m is None:
                    continue
                parts = {int(p) for t, p in _TP.findall(m.group(3)) if t == topic}
                if parts:
                    out.append((at, host.member(m.group(1)), m.group(2), parts))
            out += [(at, member, "gone", set()) for at, member in host.gone]
        return sorted(out, key=lambda e: e[0])

    def owners(self, topic: str, at: float) -> dict[int, str]:
        """Each partition's owner of ``topic`` at ``at``: the member it was last assigned to, unless
        that member revoked it, exited or was killed since."""
        owner: dict[int, str] = {}
        for t, member, what, parts in self.events(topic):
            if t > at:
                break
            if what == "assigned":
                owner.update(dict.fromkeys(parts, member))
                continue
            for p in [p for p, m in owner.items() if (p in parts if what == "revoked" else
                                                       m == member or
                                                       m.startswith(member + ":"))]:
                if what != "revoked" or owner[p] == member:
                    del owner[p]
        return owner

    def restored(self, start: float, end: float) -> int:
        """Changelog records of the restores logged in ``[start, end]``."""
        return sum(int(m.group(3)) for host in self.hosts for at, line in list(host.lines)
                   if start <= at <= end and (m := _RESTORED.search(line)) is not None)

    def killed_members(self, start: float, end: float) -> set[str]:
        """The members SIGKILLed in ``[start, end]``."""
        return {member for host in self.hosts for at, member in host.killed
                if start <= at <= end}


class Offsets:
    """Polls the group's committed offsets and the input's end offsets every 100 ms, from
    a consumer of the group that never joins it."""

    def __init__(self, bootstrap: str, group: str, topics: list[str], partitions: int) -> None:
        self.tps = [TopicPartition(t, p) for t in topics for p in range(partitions)]
        self.consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                                         enable_auto_commit=False)
        self.samples: list[tuple[float, list[int], list[int]]] = []

    async def run(self) -> None:
        """Poll until cancelled."""
        await self.consumer.start()
        try:
            while True:
                committed = [await self.consumer.committed(tp) or 0 for tp in self.tps]
                ends = await self.consumer.end_offsets(self.tps)
                self.samples.append((time.monotonic(), committed, [ends[tp] for tp in self.tps]))
                await asyncio.sleep(POLL_SECS)
        finally:
            await self.consumer.stop()

    def latest(self) -> tuple[list[int], list[int]]:
        """The last committed and end offsets polled."""
        return self.samples[-1][1], self.samples[-1][2]

    def stand_still(self, partition: int, start: float, end: float) -> float:
        """Longest stretch of ``[start, end]`` in which the committed offset of ``partition``
        (an index into ``tps``) did not advance while its topic had records beyond it."""
        longest, since, last = 0.0, start, None
        for at, committed, ends in self.samples:
            if at < start or at > end:
                if at < start:
                    last = committed[partition]
                continue
            if committed[partition] != last:
                since, last = at, committed[partition]
            elif committed[partition] < ends[partition]:
                longest = max(longest, at - since)
        return longest


class Input:
    """Writes ``rate`` sentences per second of ``words`` words while running; counts the
    truth of every word written."""

    def __init__(self, bootstrap: str, topic: str, rate: float, words: int,
                 vocabulary: int) -> None:
        self.bootstrap, self.topic, self.rate, self.words = bootstrap, topic, rate, words
        self.vocabulary = [f"w{i:04d}" for i in range(vocabulary)]
        self.truth: Counter[str] = Counter()
        self.running = asyncio.Event()
        self.rng = random.Random(5)

    async def run(self) -> None:
        """Write while ``running`` is set, until cancelled."""
        producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap, linger_ms=20)
        await producer.start()
        try:
            sent, since = 0, time.monotonic()
            while True:
                if not self.running.is_set():
                    await self.running.wait()
                    sent, since = 0, time.monotonic()
                due = int((time.monotonic() - since) * self.rate) - sent
                for _ in range(due):
                    words = self.rng.choices(self.vocabulary, k=self.words)
                    self.truth.update(words)
                    await producer.send(self.topic, " ".join(words).encode())
                sent += due
                await asyncio.sleep(0.02)
        finally:
            await producer.stop()


@dataclass
class Row:
    """One change's figures: stand-stills of the count's state partitions (the repartition
    topic's) and of the input's, moved and kept, in seconds (None: no such partition)."""

    change: str
    restored: int
    state_moved: float | None
    state_kept: float | None
    input_moved: float | None
    input_kept: float | None
    secs: float


async def seed(bootstrap: str, topic: str, keys: int) -> Counter[str]:
    """``keys`` distinct words, ``SEED_WORDS`` to a sentence, written in big batches."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=50,
                                max_batch_size=1024 * 1024, max_request_size=8 * 1024 * 1024)
    await producer.start()
    truth: Counter[str] = Counter()
    try:
        futures = []
        for at in range(0, keys, SEED_WORDS):
            words = [f"k{i:07d}" for i in range(at, min(keys, at + SEED_WORDS))]
            truth.update(words)
            futures.append(await producer.send(topic, " ".join(words).encode()))
        await asyncio.gather(*futures)
    finally:
        await producer.stop()
    return truth


async def settled(cluster: Cluster, offsets: Offsets, members: int) -> float:
    """Wait until ``members`` members hold every partition of both topics and each
    partition is committed up to its topic's end as of then; returns that time."""
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while True:
        if time.monotonic() > deadline:
            raise SystemExit(f"not settled in {SETTLE_TIMEOUT:.0f} s; logs in {cluster.tmp}")
        owners = [cluster.owners(t, time.monotonic()) for t in cluster.topics]
        if all(len(o) == cluster.partitions and len(set(o.values())) == members
               for o in owners):
            break
        await asyncio.sleep(0.2)
    while not offsets.samples:
        await asyncio.sleep(0.1)
    _, target = offsets.latest()
    while True:
        if time.monotonic() > deadline:
            raise SystemExit(f"not caught up in {SETTLE_TIMEOUT:.0f} s; logs in {cluster.tmp}")
        committed, _ = offsets.latest()
        if all(c >= t for c, t in zip(committed, target, strict=True)):
            return offsets.samples[-1][0]
        await asyncio.sleep(0.1)


def _moved(before: dict[int, str], after: dict[int, str], killed: set[str],
           partitions: int) -> set[int]:
    """Partitions with another owner after than before, or whose owner was killed."""
    def dead(member: str | None) -> bool:
        return member is not None and any(member == k or member.startswith(k + ":")
                                          for k in killed)

    return {p for p in range(partitions) if before.get(p) != after.get(p) or dead(before.get(p))}


async def measure(name: str, cluster: Cluster, offsets: Offsets, members: int,
                  action: Any) -> Row:
    """Do ``action`` and measure the change until ``members`` members settled."""
    now = time.monotonic()
    before = {t: cluster.owners(t, now) for t in cluster.topics}
    start = time.monotonic()
    await asyncio.to_thread(action)
    end = await settled(cluster, offsets, members)
    killed = cluster.killed_members(start, end)
    figures: list[float | None] = []
    for index, topic in enumerate(cluster.topics):
        moved = _moved(before[topic], cluster.owners(topic, end), killed, cluster.partitions)
        for parts in (moved, set(range(cluster.partitions)) - moved):
            figures.append(max((offsets.stand_still(index * cluster.partitions + p, start, end)
                                for p in parts), default=None))
    row = Row(name, cluster.restored(start, end), figures[2], figures[3], figures[0],
              figures[1], end - start)
    print(f"  {_format(row)}", flush=True)
    return row


async def drained_overcount(cluster: Cluster, offsets: Offsets, source: Input,
                            seeded: Counter[str], reader: CountsReader) -> int:
    """Pause the input, wait until all is committed and counted; the sum of every word's
    last count over its truth."""
    source.running.clear()
    await asyncio.sleep(1)
    _, target = offsets.latest()
    while any(c < t for c, t in zip(offsets.latest()[0], target, strict=True)):
        await asyncio.sleep(0.2)
    await reader.to_end()
    truth = seeded + source.truth
    under = {w: (reader.last.get(w, 0), c) for w, c in truth.items()
             if reader.last.get(w, 0) < c}
    if under:
        print(f"  counts under the truth for {len(under)} words, e.g. "
              f"{list(under.items())[:5]}")
    over = sum(max(0, reader.last.get(w, 0) - c) for w, c in truth.items())
    source.running.set()
    return over


class CountsReader:
    """Keeps every word's last count of the counts topic, read in the background."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        self.tps = [TopicPartition(topic, p) for p in range(partitions)]
        self.consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                         auto_offset_reset="earliest",
                                         max_partition_fetch_bytes=4 * 1024 * 1024)
        self.last: dict[str, int] = {}
        self.position: dict[TopicPartition, int] = {}
        self.started = asyncio.Event()

    async def run(self) -> None:
        """Read from offset 0 until cancelled."""
        await self.consumer.start()
        self.consumer.assign(self.tps)
        for tp in self.tps:
            self.consumer.seek(tp, 0)
        self.started.set()
        try:
            while True:
                got = await self.consumer.getmany(timeout_ms=500, max_records=20000)
                for tp, records in got.items():
                    for r in records:
                        self.last[r.key.decode()] = int(r.value)
                    self.position[tp] = records[-1].offset + 1
        finally:
            await self.consumer.stop()

    async def to_end(self) -> None:
        """Until everything written so far is read (the counts stopped changing)."""
        await self.started.wait()
        while True:
            ends = await self.consumer.end_offsets(self.tps)
            await asyncio.sleep(2)
            if ends == await self.consumer.end_offsets(self.tps) and all(
                    self.position.get(tp, 0) >= ends[tp] for tp in self.tps):
                return


async def quiet(offsets: Offsets, partitions: int, secs: float = 10.0) -> Row:
    """The longest stand-still over ``secs`` with no change: the floor the rows stand on."""
    start = time.monotonic()
    await asyncio.sleep(secs)
    end = time.monotonic()
    stills = [offsets.stand_still(i, start, end) for i in range(2 * partitions)]
    row = Row(f"no change ({secs:.0f} s)", 0, None, max(stills[partitions:]), None,
              max(stills[:partitions]), end - start)
    print(f"  {_format(row)}", flush=True)
    return row


@dataclass
class Result:
    """Everything one run measured."""

    seed_secs: float
    rows: list[Row]
    overcounts: list[tuple[str, int]]


async def bench(bootstrap: str, args: argparse.Namespace, tmp: Path, topology: Path,
                env: dict[str, str], cwd: Path) -> Result:
    """The setup, the quiet row, the four changes and the two over-counts."""
    tag = str(time.monotonic_ns())
    topic, counts, group = f"sentences-{tag}", f"counts-{tag}", f"bench-membership-{tag}"
    await create_kept_topics(bootstrap, {topic: args.partitions, counts: args.partitions})
    cluster = Cluster(bootstrap, topic, counts, group, args.partitions, topology, cwd, env, tmp)
    offsets = Offsets(bootstrap, group, cluster.topics, args.partitions)
    reader = CountsReader(bootstrap, counts, args.partitions)
    source = Input(bootstrap, topic, args.rate, args.sentence_words, args.vocabulary)
    tasks = [asyncio.create_task(t.run()) for t in (reader, source)]
    two = {"topology.workers": 2}
    try:
        seeded = await seed(bootstrap, topic, args.keys)
        started = time.monotonic()
        a = cluster.start("A", "a", **two)
        while len(reader.last) < args.keys:  # only the seeded words so far
            await asyncio.sleep(0.5)
        seed_secs = time.monotonic() - started
        tasks.append(asyncio.create_task(offsets.run()))
        print(f"  {args.keys:,} keys counted by host A alone in {seed_secs:.0f} s", flush=True)
        source.running.set()
        await settled(cluster, offsets, 1)
        rows = [await quiet(offsets, args.partitions)]
        holder: dict[str, Host] = {}

        def join() -> None:
            holder["B"] = cluster.start("B", "b", **two)

        rows.append(await measure("(1) join: B starts beside A", cluster, offsets, 2, join))
        rows.append(await measure("(2) leave: B stops (SIGTERM)", cluster, offsets, 1,
                                  holder["B"].stop))
        await asyncio.to_thread(a.stop)
        sup = cluster.start("S", "a", "--workers", "2")
        await settled(cluster, offsets, 2)
        await asyncio.sleep(5)
        rows.append(await measure("(3) SIGKILL of a worker (--workers 2)", cluster, offsets, 2,
                                  lambda: sup.kill_worker(1)))
        over3 = await drained_overcount(cluster, offsets, source, seeded, reader)
        await asyncio.to_thread(sup.stop)
        a = cluster.start("A2", "a", **two)
        await settled(cluster, offsets, 1)
        await asyncio.sleep(5)

        def restart() -> None:
            a.kill()
            holder["A"] = cluster.start("A3", "a", **two)

        rows.append(await measure("(4) host A SIGKILLed, started again", cluster, offsets, 1,
                                  restart))
        over4 = await drained_overcount(cluster, offsets, source, seeded, reader)
        await asyncio.to_thread(holder["A"].stop)
        return Result(seed_secs, rows, [("(3)", over3), ("(4)", over4 - over3)])
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for host in cluster.hosts:
            if host.proc.poll() is None:
                host.proc.kill()
                host.proc.wait(30)


def _secs(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"


def _format(row: Row) -> str:
    return (f"{row.change:<40}{row.restored:>10,}{_secs(row.state_moved):>9}"
            f"{_secs(row.state_kept):>9}{_secs(row.input_moved):>9}{_secs(row.input_kept):>9}"
            f"{row.secs:>8.1f} s")


def main() -> None:
    """Parse the options, start the test broker, run, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--rate", type=float, default=2000, help="sentences per second")
    parser.add_argument("--sentence-words", type=int, default=2)
    parser.add_argument("--vocabulary", type=int, default=200)
    parser.add_argument("--pythonpath", type=Path, default=None,
                        help="PYTHONPATH of the engine processes (another checkout)")
    parser.add_argument("--repo", type=Path, default=None,
                        help="checkout whose topologies/stateful_word_count.py runs "
                             "(default: --pythonpath, else this one)")
    parser.add_argument("--keep-logs", type=Path, default=None,
                        help="write the processes' logs here (else a temporary directory)")
    args = parser.parse_args()
    repo = (args.repo or args.pythonpath or _ROOT).resolve()
    env = dict(os.environ)
    env["PYTHONPATH"] = str((args.pythonpath or _ROOT).resolve())
    topology = repo / "topologies" / "stateful_word_count.py"
    with TestingBroker() as broker, tempfile.TemporaryDirectory() as tmpdir:
        tmp = args.keep_logs or Path(tmpdir)
        tmp.mkdir(parents=True, exist_ok=True)
        print(f"membership changes of {topology} (PYTHONPATH {env['PYTHONPATH']}), "
              f"{args.keys:,} keys over {args.partitions} partitions, input "
              f"{args.rate:,.0f} sentences/s of {args.sentence_words} words:", flush=True)
        result = run_loop(bench(broker.bootstrap, args, tmp, topology, env, repo))
    print(f"\n{args.keys:,} keys counted once (setup) in {result.seed_secs:.0f} s")
    print(f"{'':<40}{'records':>10}{'state partitions':>18}{'input partitions':>18}")
    print(f"{'change':<40}{'restored':>10}{'moved':>9}{'kept':>9}{'moved':>9}{'kept':>9}"
          f"{'window':>10}")
    for row in result.rows:
        print(_format(row))
    for change, over in result.overcounts:
        print(f"over-count after the SIGKILL of {change}: {over:,} words counted twice")


if __name__ == "__main__":
    main()
