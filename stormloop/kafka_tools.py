"""``stormloop produce`` and ``stormloop consume``: put lines on a topic, read a topic back.

For trying the Kafka examples against ``stormloop broker`` (or any Kafka): ``produce``
writes each non-empty line of stdin (or ``--from FILE``) as one record, value = the line
in UTF-8, and with ``--key-field F`` reads each line as a JSON object whose field ``F`` is
the record's key. ``consume`` prints each record as ``KEY<TAB>VALUE`` (``VALUE`` alone when
the key is null), from the end of the topic or ``--from-beginning``, until ``--max``
records, ``--idle-secs`` without one, or Ctrl-C. A broker that cannot be reached is one
line and status 1; a bad command line or input line is one line and status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

__all__ = ["consume", "produce"]

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
_FLUSH_EVERY = 1000  # records in flight before waiting for the broker's answers


class ToolError(Exception):
    """One line for the user; ``status`` is the exit status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def _aiokafka() -> Any:
    try:
        import aiokafka
    except ImportError:
        raise ToolError("aiokafka is not installed; install it with pip install "
                        "'stormloop[kafka]'", 2) from None
    return aiokafka


def _records(lines: Iterable[str], key_field: str | None) -> Iterator[tuple[bytes | None, bytes]]:
    """``(key, value)`` per non-empty line; ``ToolError`` for a line ``key_field`` cannot use."""
    for number, line in enumerate(lines, 1):
        text = line.rstrip("\r\n")
        if not text.strip():
            continue
        if key_field is None:
            yield None, text.encode()
            continue
        try:
            obj = json.loads(text)
        except ValueError as exc:
            raise ToolError(f"line {number} is not JSON ({exc}); --key-field {key_field} "
                            f"needs one JSON object per line", 2) from None
        if not isinstance(obj, dict) or key_field not in obj:
            raise ToolError(f"line {number} has no field {key_field!r}: {text[:80]}", 2)
        key = obj[key_field]
        yield (key if isinstance(key, str) else json.dumps(key)).encode(), text.encode()


def _unreachable(bootstrap: str, exc: BaseException) -> ToolError:
    return ToolError(f"cannot reach a Kafka broker at {bootstrap} ({exc}); is one running? "
                     f"(stormloop broker starts one)", 1)


async def _produce(topic: str, bootstrap: str, records: Iterator[tuple[bytes | None, bytes]],
                   ) -> int:
    aiokafka = _aiokafka()
    producer = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        await producer.start()
    except aiokafka.errors.KafkaError as exc:
        await producer.stop()
        raise _unreachable(bootstrap, exc) from None
    sent = 0
    pending: list[asyncio.Future[Any]] = []
    try:
        for key, value in records:
            pending.append(await producer.send(topic, value, key=key))
            sent += 1
            if len(pending) >= _FLUSH_EVERY:
                await asyncio.gather(*pending)
                pending.clear()
        await asyncio.gather(*pending)
    finally:
        await producer.stop()
    return sent


async def _consume(topic: str, bootstrap: str, from_beginning: bool, most: int | None,
                   idle_secs: float | None, out: IO[str]) -> int:
    aiokafka = _aiokafka()
    consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                                         enable_auto_commit=False,
                                         auto_offset_reset="earliest")
    try:
        await consumer.start()
    except aiokafka.errors.KafkaError as exc:
        await consumer.stop()
        raise _unreachable(bootstrap, exc) from None
    try:
        partitions = await _partitions(consumer, topic)
        consumer.assign(partitions)
        for tp in partitions:
            if from_beginning:
                consumer.seek(tp, 0)  # the earliest kept offset, by auto_offset_reset
        if not from_beginning:
            await consumer.seek_to_end(*partitions)
        return await _print_records(consumer, most, idle_secs, out)
    finally:
        await consumer.stop()


async def _partitions(consumer: Any, topic: str) -> list[Any]:
    from aiokafka import TopicPartition

    topics = await consumer.topics()  # fetches the cluster's metadata
    numbers = consumer.partitions_for_topic(topic) if topic in topics else None
    if not numbers:
        known = sorted(t for t in topics if not t.startswith("__"))
        raise ToolError(f"topic {topic!r} does not exist; topics: {known}", 2)
    return [TopicPartition(topic, p) for p in sorted(numbers)]


async def _print_records(consumer: Any, most: int | None, idle_secs: float | None,
                         out: IO[str]) -> int:
    printed = 0
    loop = asyncio.get_running_loop()
    last = loop.time()
    while most is None or printed < most:
        batch = await consumer.getmany(timeout_ms=200, max_records=500)
        records = [r for rs in batch.values() for r in rs]
        if not records:
            if idle_secs is not None and loop.time() - last >= idle_secs:
                break
            continue
        last = loop.time()
        for record in records[:None if most is None else most - printed]:
            value = _text(record.value)
            out.write(value + "\n" if record.key is None else f"{_text(record.key)}\t{value}\n")
            printed += 1
        out.flush()
    return printed


def _text(raw: bytes | None) -> str:
    return "" if raw is None else raw.decode("utf-8", errors="backslashreplace")


def _run(prog: str, coro: Any) -> int:
    """Run ``coro``; a ``ToolError`` is its one line and status, Ctrl-C is status 130."""
    # aiokafka logs each failed connection attempt; the one line below says it all.
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    try:
        asyncio.run(coro)
    except ToolError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return exc.status
    except KeyboardInterrupt:
        return 130
    return 0


def produce(args: list[str]) -> int:
    """``stormloop produce``; returns the exit status."""
    parser = argparse.ArgumentParser(prog="stormloop produce", description=(
        "Write each non-empty line of stdin (or --from FILE) to TOPIC as one record (the "
        "value is the line). The topic is created if the broker creates topics on use, as "
        "stormloop broker and Kafka's default do."))
    parser.add_argument("topic")
    parser.add_argument("--from", dest="source", metavar="FILE", help="read lines from FILE")
    parser.add_argument("--key-field", metavar="FIELD", help="lines are JSON objects; the "
                        "record key is their FIELD")
    parser.add_argument("--bootstrap", default=DEFAULT_BOOTSTRAP, metavar="HOST:PORT",
                        help=f"Kafka bootstrap servers (default {DEFAULT_BOOTSTRAP})")
    options = parser.parse_args(args)

    async def main() -> None:
        with _lines(options.source) as lines:
            sent = await _produce(options.topic, options.bootstrap,
                                  _records(lines, options.key_field))
        print(f"{sent} records written to {options.topic} at {options.bootstrap}",
              file=sys.stderr)

    return _run("stormloop produce", main())


@contextlib.contextmanager
def _lines(source: str | None) -> Iterator[IO[str]]:
    if source is None:
        yield sys.stdin
        return
    if not Path(source).is_file():
        raise ToolError(f"--from {source}: no such file", 2)
    with Path(source).open(encoding="utf-8") as handle:
        yield handle


def consume(args: list[str]) -> int:
    """``stormloop consume``; returns the exit status."""
    parser = argparse.ArgumentParser(prog="stormloop consume", description=(
        "Print TOPIC's records, one per line: KEY<TAB>VALUE, or VALUE when the key is null. "
        "Reads every partition, without a consumer group (nothing is committed)."))
    parser.add_argument("topic")
    parser.add_argument("--from-beginning", action="store_true",
                        help="start at the oldest record (default: only new ones)")
    parser.add_argument("--max", type=int, default=None, metavar="N",
                        help="stop after N records")
    parser.add_argument("--idle-secs", type=float, default=None, metavar="SECS",
                        help="stop once no record came for SECS seconds")
    parser.add_argument("--bootstrap", default=DEFAULT_BOOTSTRAP, metavar="HOST:PORT",
                        help=f"Kafka bootstrap servers (default {DEFAULT_BOOTSTRAP})")
    options = parser.parse_args(args)
    if options.max is not None and options.max < 1:
        parser.error(f"--max must be >= 1, got {options.max}")
    return _run("stormloop consume", _consume(options.topic, options.bootstrap,
                                              options.from_beginning, options.max,
                                              options.idle_secs, sys.stdout))
