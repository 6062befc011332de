"""The peers of ``bench_kafka.py``: quixstreams and faust-streaming doing the same job.

    python bench_kafka_peers.py {quix,quix-count,quix-group-by,faust} --bootstrap HOST:PORT
                                --source T --sink T --group G --records N [--state-dir DIR]

Run by ``bench_kafka.py`` in a virtual environment of its own (the peers pin client
libraries the engine does not use), so this file imports nothing from the project. Each
peer consumes ``source`` in consumer group ``group``, splits and counts every JSON sentence
(the very ``process`` the engine's bolts import), produces one record per input to ``sink``,
with at-least-once settings, and exits once it has handed ``records`` outputs to its
producer and flushed it. ``quix-count`` is ``bench_stateful.py``'s peer: it counts each
record's key in quixstreams' state and produces the running count; ``quix-group-by`` is
``bench_keyed_workers.py``'s, the keyed word count through quixstreams' own repartition
topic (it runs until stopped). The rate is read by the caller from the output topic.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

import orjson


def process(value: bytes, counts: dict[str, int]) -> bytes:
    """Split the sentence, count its words, return the output record's value."""
    doc = orjson.loads(value)
    words = doc["text"].split()
    for word in words:
        counts[word] = counts.get(word, 0) + 1
    return orjson.dumps({"id": doc["id"], "words": len(words)})


def run_quix(args: argparse.Namespace) -> None:
    """quixstreams: ``StreamingDataFrame.apply`` then ``to_topic``, at least once."""
    from quixstreams import Application

    app = Application(
        broker_address=args.bootstrap, consumer_group=args.group,
        auto_offset_reset="earliest", processing_guarantee="at-least-once",
        use_changelog_topics=False, loglevel="WARNING",
        consumer_extra_config={"session.timeout.ms": 6000, "heartbeat.interval.ms": 250},
        producer_extra_config={"acks": "all", "linger.ms": 5})
    source = app.topic(args.source, key_deserializer="bytes", value_deserializer="bytes")
    sink = app.topic(args.sink, key_serializer="bytes", value_serializer="bytes")
    counts: dict[str, int] = {}
    seen = [0]

    def step(value: bytes) -> bytes:
        out = process(value, counts)
        seen[0] += 1
        if seen[0] >= args.records:
            app.stop()  # the run loop flushes the producer and commits before returning
        return out

    sdf = app.dataframe(source)
    sdf = sdf.apply(step)
    # quixstreams gives an output the input's timestamp by default; the rate is read from
    # output timestamps, so stamp outputs when produced, as the other systems do.
    sdf = sdf.set_timestamp(lambda value, key, timestamp, headers: time.time_ns() // 1_000_000)
    sdf.to_topic(sink)
    app.run()


def run_quix_count(args: argparse.Namespace) -> None:
    """quixstreams, stateful: each record's key (a word) counted in the key's state, the
    count produced to ``sink``; default state (RocksDB with a changelog topic), default
    commit interval, at least once."""
    from quixstreams import Application

    app = Application(
        broker_address=args.bootstrap, consumer_group=args.group,
        auto_offset_reset="earliest", state_dir=args.state_dir, loglevel="WARNING",
        consumer_extra_config={"session.timeout.ms": 6000, "heartbeat.interval.ms": 250})
    source = app.topic(args.source, key_deserializer="str", value_deserializer="str")
    sink = app.topic(args.sink, key_serializer="str", value_serializer="json")
    seen = [0]

    def count(value: str, state: Any) -> int:
        n = state.get("count", 0) + 1
        state.set("count", n)
        seen[0] += 1
        if seen[0] >= args.records:
            app.stop()  # the run loop commits the last checkpoint before returning
        return n

    sdf = app.dataframe(source)
    sdf = sdf.apply(count, stateful=True)
    sdf = sdf.set_timestamp(lambda value, key, timestamp, headers: time.time_ns() // 1_000_000)
    sdf.to_topic(sink)
    app.run()


def run_quix_group_by(args: argparse.Namespace) -> None:
    """quixstreams, keyed: each sentence split into words (``expand``), regrouped by word
    (``group_by``, through its repartition topic), the word counted in its state and the
    count produced to ``sink``; default settings but the group's. Runs until stopped (the
    caller reads the counts and stops every process of the group)."""
    from quixstreams import Application

    app = Application(broker_address=args.bootstrap, consumer_group=args.group,
                      auto_offset_reset="earliest", state_dir=args.state_dir,
                      loglevel="WARNING")
    source = app.topic(args.source, value_deserializer="str")
    sink = app.topic(args.sink, key_serializer="str", value_serializer="json")

    def count(word: str, state: Any) -> int:
        n = state.get("count", 0) + 1
        state.set("count", n)
        return n

    sdf = app.dataframe(source)
    sdf = sdf.apply(lambda sentence: sentence.split(), expand=True)
    sdf = sdf.group_by(lambda word: word, name="word")
    sdf = sdf.apply(count, stateful=True)
    sdf = sdf.set_timestamp(lambda value, key, timestamp, headers: time.time_ns() // 1_000_000)
    sdf.to_topic(sink)
    app.run()


def run_faust(args: argparse.Namespace) -> None:
    """faust-streaming: one agent, ``send`` per event, at least once (faust's default)."""
    import faust

    app = faust.App(args.group, broker=f"kafka://{args.bootstrap}", web_enabled=False,
                    producer_acks=-1, producer_linger_ms=5, topic_partitions=4,
                    broker_session_timeout=6.0, broker_heartbeat_interval=0.25,
                    consumer_auto_offset_reset="earliest")
    source = app.topic(args.source, key_type=bytes, value_type=bytes,
                       key_serializer="raw", value_serializer="raw")
    sink = app.topic(args.sink, key_serializer="raw", value_serializer="raw")
    counts: dict[str, int] = {}
    seen = [0]

    @app.agent(source)
    async def relay(stream: Any) -> None:
        async for event in stream.events():
            await sink.send(key=event.key, value=process(event.value, counts))
            seen[0] += 1
            if seen[0] >= args.records:
                await app.producer.flush()
                sys.stdout.flush()
                os._exit(0)  # faust has no "stop after N"; everything is flushed

    worker = faust.Worker(app, loglevel="WARNING", quiet=True)
    worker.execute_from_commandline()


def main() -> None:
    """Parse the arguments and run one peer."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("peer", choices=["quix", "quix-count", "quix-group-by", "faust"])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--sink", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--records", type=int, required=True)
    parser.add_argument("--state-dir", default="state", help="quix-count's state directory")
    args = parser.parse_args()
    {"quix": run_quix, "quix-count": run_quix_count, "quix-group-by": run_quix_group_by,
     "faust": run_faust}[args.peer](args)


if __name__ == "__main__":
    main()
