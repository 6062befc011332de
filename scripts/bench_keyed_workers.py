"""The stateful word count across two processes against one: what the keyed hop costs.

    python scripts/bench_keyed_workers.py [--sentences 60000] [--words-per-sentence 5]
                                          [--vocabulary 5000] [--partitions 4] [--runs 3]
                                          [--systems engine,quix]
                                          [--bootstrap-servers HOST:PORT]

Without ``--bootstrap-servers`` it starts the Tansu test broker. Each run writes the
sentences (seeded; the same for every run) to a fresh topic of ``--partitions``
partitions and runs ``python -m engine run topologies/stateful_word_count.py`` in a fresh
consumer group and state directory, at its default configuration (only the broker,
topics, group, state directory and ``auto_offset_reset=earliest`` are set, so the
prefilled input is read), once with ``--workers 1`` (the fields grouping in process) and
once with ``--workers 2`` (every word through the repartition topic, the count's state per
partition, two processes).

With ``--systems engine,quix`` quixstreams 3.28 runs the same count beside it (``group_by``
on the word through its own repartition topic, state in RocksDB with its changelog; the
peer ``quix-group-by`` of ``bench_kafka_peers.py``, in the virtual environment
``bench_kafka.py`` makes), in one process and in two of one group.

The rate is words counted per second in steady state: from the producer timestamp of the
5 % mark of the counts topic to its last record. The CPU per word is the engine's
processes' CPU time (the supervisor and its workers, sampled every 0.1 s) over the same
span, per word counted there (the system's processes), so start-up and group joins are
left out of both. Every run
checks that the last count of every word is the truth; a peer whose counts stop short
(none for 30 s) is reported with how many never came, and its rate is taken from those
that did. With ``--runs N`` the table gives
medians and the spread.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parent.parent
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

# The imports below need the path set above.
from bench_kafka import PEER_SCRIPT, peer_python  # noqa: E402
from benchlib import (  # noqa: E402
    check_counts,
    fresh_count_topics,
    make_sentences,
    read_counts,
    run_loop,
    word_truth,
)

from connectors.kafka.testing_broker import TestingBroker  # noqa: E402

_TICKS = os.sysconf("SC_CLK_TCK")
TOPOLOGY = _ROOT / "topologies" / "stateful_word_count.py"
GOAL = 1.1  # --workers 2 words/s over --workers 1
CPU_GOAL = 1.25  # CPU per word through the hop over in process
IDLE_SECS = 30  # a run that writes no count for this long is over
PEER_ATTEMPTS = 3  # runs of one system and process count before a peer with no rate stops it


@dataclass
class Run:
    """One run's steady-state figures."""

    rate: float  # words counted per second
    cpu_us: float  # engine CPU microseconds per word counted


def _tree(root: int) -> list[int]:
    """``root`` and every process below it."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            parents.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(parents.get(pid, ()))
    return out


def _cpu(pids: list[int], gone: dict[int, float]) -> float:
    """CPU seconds of ``pids`` (user + system); a process that ended keeps its last
    reading in ``gone``."""
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            gone[pid] = (int(fields[11]) + int(fields[12])) / _TICKS
        except (OSError, IndexError, ValueError):
            pass
    return sum(gone.values())








def _commands(system: str, workers: int, conf: dict[str, Any],
              state_dir: Path) -> list[list[str]]:
    """The processes of one run: the engine's CLI, or ``workers`` quixstreams peers."""
    if system == "engine":
        args = [sys.executable, "-m", "engine", "run", str(TOPOLOGY), "--workers",
                str(workers)]
        for key, value in conf.items():
            args += ["--conf", f"{key}={value}"]
        return [args]
    return [[str(peer_python()), str(PEER_SCRIPT), "quix-group-by",
             "--bootstrap", conf["kafka.bootstrap.servers"],
             "--source", conf["kafka.sentences.topic"], "--sink", conf["kafka.counts.topic"],
             "--group", conf["kafka.group.id"], "--records", "0",
             "--state-dir", str(state_dir / f"quix-{i}")] for i in range(workers)]


async def one_run(bootstrap: str, system: str, workers: int, sentences: list[str],
                  truth: Counter[str], partitions: int, state_dir: Path) -> Run | None:
    """One run of the stateful word count of ``system`` in ``workers`` processes; None
    when a peer wrote too few counts to take a rate from."""
    tag = f"{time.monotonic_ns()}-{system}{workers}"
    source, counts, group = await fresh_count_topics(bootstrap, tag, "bench-workers",
                                                     sentences, partitions)
    total = sum(truth.values())
    conf = {"kafka.bootstrap.servers": bootstrap, "kafka.sentences.topic": source,
            "kafka.counts.topic": counts, "kafka.group.id": group,
            "topology.state.dir": str(state_dir / tag),
            "kafka.consumer.auto_offset_reset": "earliest"}
    log = state_dir / f"{tag}.log"
    with log.open("wb") as out:
        procs = [subprocess.Popen(cmd, cwd=_ROOT, stdout=out, stderr=subprocess.STDOUT)
                 for cmd in _commands(system, workers, conf, state_dir / tag)]
    samples: list[tuple[float, float]] = []
    gone: dict[int, float] = {}
    stop = asyncio.Event()

    async def sample() -> None:
        while not stop.is_set():
            pids = [pid for p in procs for pid in _tree(p.pid)]
            samples.append((time.time(), _cpu(pids, gone)))
            await asyncio.sleep(0.1)

    sampler = asyncio.create_task(sample())
    try:
        records = await read_counts(bootstrap, counts, partitions, total, secs=600,
                                    idle_secs=IDLE_SECS)
    finally:
        stop.set()
        await sampler
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(60)
    if len(records) < total and system == "engine":
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:])
        raise SystemExit(f"{system} x{workers}: {len(records)} of {total} counts; the end of "
                         f"its log:\n{tail}")
    if len(records) < total:  # a peer's loss is reported, its rate taken from what came
        print(f"  {system} x{workers}: {total - len(records)} of {total} counts never came "
              f"(none for {IDLE_SECS} s)", flush=True)
    else:
        check_counts(records, truth)
    stamps = sorted(r.timestamp / 1000 for r in records)
    mark = len(stamps) // 20
    if len(stamps) - mark < 2 or stamps[-1] <= stamps[mark]:
        return None  # too few counts came to take a rate from
    start, end = stamps[mark], stamps[-1]
    words = len(stamps) - mark
    cpu = _cpu_at(samples, end) - _cpu_at(samples, start)
    return Run(words / (end - start), cpu / words * 1e6)


def _cpu_at(samples: list[tuple[float, float]], when: float) -> float:
    """The CPU reading at wall time ``when``, interpolated between samples."""
    times = [t for t, _ in samples]
    i = bisect.bisect_left(times, when)
    if i <= 0:
        return samples[0][1]
    if i >= len(samples):
        return samples[-1][1]
    (t0, c0), (t1, c1) = samples[i - 1], samples[i]
    return c0 + (c1 - c0) * (when - t0) / (t1 - t0) if t1 > t0 else c1


async def bench(bootstrap: str, args: argparse.Namespace) -> dict[tuple[str, int], list[Run]]:
    """Every run of each system and process count, alternating."""
    sentences = make_sentences(args.sentences, vocabulary=args.vocabulary, seed=7,
                               words_per_sentence=args.words_per_sentence)
    truth = word_truth(sentences)
    systems = args.systems.split(",")
    runs: dict[tuple[str, int], list[Run]] = {(s, w): [] for s in systems for w in (1, 2)}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.runs):
            for system, workers in runs:
                run = None
                for _attempt in range(PEER_ATTEMPTS):
                    run = await one_run(bootstrap, system, workers, sentences, truth,
                                        args.partitions, Path(tmp))
                    if run is not None:
                        break
                    print(f"  {system} x{workers}: too few counts for a rate; run again",
                          flush=True)
                if run is None:
                    raise SystemExit(f"{system} x{workers}: no rate in {PEER_ATTEMPTS} runs")
                print(f"  {system} x{workers}: {run.rate:>10,.0f} words/s "
                      f"{run.cpu_us:>6.1f} CPU us/word", flush=True)
                runs[system, workers].append(run)
    return runs


def report(runs: dict[tuple[str, int], list[Run]], args: argparse.Namespace) -> None:
    """The table: medians and spread, the ratios and the goals."""
    words = args.sentences * args.words_per_sentence
    print(f"stateful word count, {args.sentences:,} sentences x "
          f"{args.words_per_sentence} words ({words:,} words, {args.vocabulary:,} keys), "
          f"{args.partitions} partitions, default config, {args.runs} run(s):")
    print(f"  {'':<22}{'words/s':>10} {'spread':>21} {'CPU us/word':>12}")
    for (system, workers), rs in runs.items():
        rates = [r.rate for r in rs]
        label = f"{system}, {workers} process{'es' if workers > 1 else ''}"
        print(f"  {label:<22}{statistics.median(rates):>10,.0f} "
              f"{min(rates):>10,.0f}-{max(rates):<10,.0f}"
              f"{statistics.median(r.cpu_us for r in rs):>12.1f}")
    for system in dict.fromkeys(s for s, _ in runs):
        one, two = runs[system, 1], runs[system, 2]
        ratios = [b.rate / a.rate for a, b in zip(one, two, strict=True)]
        cpu = [b.cpu_us / a.cpu_us for a, b in zip(one, two, strict=True)]
        goal = system == "engine"
        print(f"  {system}: 2 processes / 1: {statistics.median(ratios):.2f} "
              f"({min(ratios):.2f}-{max(ratios):.2f}{f'; goal >= {GOAL}' if goal else ''}); "
              f"CPU per word, 2 / 1: {statistics.median(cpu):.2f} "
              f"({min(cpu):.2f}-{max(cpu):.2f}{f'; goal <= {CPU_GOAL}' if goal else ''})")
    if ("quix", 2) in runs and ("engine", 2) in runs:
        for workers in (1, 2):
            ratio = [a.rate / b.rate for a, b in
                     zip(runs["engine", workers], runs["quix", workers], strict=True)]
            print(f"  engine / quixstreams, {workers} process(es): "
                  f"{statistics.median(ratio):.2f} ({min(ratio):.2f}-{max(ratio):.2f})")


def main() -> None:
    """Parse the arguments, start the broker if none is given, run and report."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=60000)
    parser.add_argument("--words-per-sentence", type=int, default=5)
    parser.add_argument("--vocabulary", type=int, default=5000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--systems", default="engine", help="engine, quix, or both")
    parser.add_argument("--bootstrap-servers", default=None)
    args = parser.parse_args()
    if args.bootstrap_servers:
        report(run_loop(bench(args.bootstrap_servers, args)), args)
    else:
        with TestingBroker() as broker:
            report(run_loop(bench(broker.bootstrap, args)), args)


if __name__ == "__main__":
    main()
