"""``stormloop topics`` and ``stormloop groups``: make and look at topics, see a group's lag.

    stormloop topics create NAME --partitions N [--replication-factor R] [--config K=V ...]
    stormloop topics list
    stormloop topics describe NAME
    stormloop groups describe GROUP --topic TOPIC

Each takes ``--bootstrap HOST:PORT`` (default ``127.0.0.1:9092``). A partition's end is
the high watermark of a fetch response, read by a consumer of no group: a broker's answer
to ListOffsets "latest" may be below the end (the test broker's is). A group's committed
offsets are read by a consumer of that ``group_id`` calling ``committed``, which never
joins the group (so it does not disturb a running topology). A broker that cannot be
reached is one line and status 1; a bad command line, a topic that exists already or
does not exist, one line and status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import IO, Any

from stormloop.kafka_tools import (
    DEFAULT_BOOTSTRAP,
    ToolError,
    _aiokafka,
    _partitions,
    _run,
    _unreachable,
)

__all__ = ["groups", "topics"]

_TOPIC_EXISTS = 36  # Kafka's TOPIC_ALREADY_EXISTS error code
_FETCH_SECS = 10.0


@contextlib.asynccontextmanager
async def _started(client: Any, bootstrap: str) -> AsyncIterator[Any]:
    """``client`` started (a broker that does not answer is a ``ToolError``), then closed."""
    aiokafka = _aiokafka()
    try:
        await client.start()
    except aiokafka.errors.KafkaError as exc:
        await _close(client)
        raise _unreachable(bootstrap, exc) from None
    try:
        yield client
    finally:
        await _close(client)


async def _close(client: Any) -> None:
    await (client.close() if hasattr(client, "close") else client.stop())


def _admin(bootstrap: str) -> Any:
    from aiokafka.admin import AIOKafkaAdminClient

    return AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)


def _reader(bootstrap: str, group: str | None = None) -> Any:
    return _aiokafka().AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                                        enable_auto_commit=False,
                                        auto_offset_reset="earliest")


def parse_configs(pairs: Sequence[str]) -> dict[str, str]:
    """``--config K=V`` values as a dict; ``ToolError`` for one without ``=`` or a key."""
    configs: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ToolError(f"--config expects KEY=VALUE (e.g. retention.ms=86400000), "
                            f"got {pair!r}", 2)
        configs[key.strip()] = value
    return configs


def _count(raw: str, option: str) -> int:
    try:
        number = int(raw)
    except ValueError:
        number = 0
    if number < 1:
        raise ToolError(f"{option} must be a whole number >= 1, got {raw!r}", 2)
    return number


async def create(bootstrap: str, name: str, partitions: int, replicas: int,
                 configs: Mapping[str, str]) -> str:
    """Create topic ``name``; the line that says so. ``ToolError`` if it exists."""
    from aiokafka.admin import NewTopic

    async with _started(_admin(bootstrap), bootstrap) as admin:
        answer = await admin.create_topics([NewTopic(name, partitions, replicas,
                                                     topic_configs=dict(configs))])
        for _, code, message in answer.topic_errors:
            if code == _TOPIC_EXISTS:
                raise ToolError(f"topic {name!r} exists already; nothing changed (stormloop "
                                f"topics describe {name} shows it)", 2)
            if code:
                raise ToolError(f"topic {name!r} not created: {message} (error {code})", 2)
    extra = "".join(f" {k}={v}" for k, v in configs.items())
    return f"created topic {name} with {partitions} partitions{extra}"


async def _partition_counts(admin: Any) -> dict[str, int]:
    names = sorted(await admin.list_topics())
    if not names:
        return {}
    return {d["topic"]: len(d["partitions"]) for d in await admin.describe_topics(names)}


async def listing(bootstrap: str, internal: bool) -> list[str]:
    """``NAME<TAB>PARTITIONS`` per topic, by name (``__`` internal ones only if asked)."""
    async with _started(_admin(bootstrap), bootstrap) as admin:
        counts = await _partition_counts(admin)
    return [f"{name}\t{n}" for name, n in sorted(counts.items())
            if internal or not name.startswith("__")]


async def _configs(admin: Any, name: str) -> dict[str, str]:
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    answers = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, name)])
    return {entry[0]: entry[1] for answer in answers for resource in answer.resources
            for entry in resource[4]}


async def _ends(bootstrap: str, name: str, group: str | None = None
                ) -> tuple[dict[int, int], dict[int, int], dict[int, int | None]]:
    """Per partition: log start, end (fetch high watermark), and ``group``'s committed
    offset (``None`` if it never committed; all ``None`` without a group)."""
    async with _started(_reader(bootstrap, group), bootstrap) as reader:
        tps = await _partitions(reader, name)
        committed = {tp.partition: await reader.committed(tp) if group else None
                     for tp in tps}
        starts = await reader.beginning_offsets(tps)
        reader.assign(tps)
        async with asyncio.timeout(_FETCH_SECS):
            while any(reader.highwater(tp) is None for tp in tps):
                await reader.getmany(*tps, timeout_ms=200, max_records=1)
        return ({tp.partition: starts[tp] for tp in tps},
                {tp.partition: reader.highwater(tp) for tp in tps}, committed)


async def describe(bootstrap: str, name: str) -> list[str]:
    """Topic ``name``: partitions, replication, configs, then each partition's log start,
    end and records held."""
    starts, ends, _ = await _ends(bootstrap, name)
    async with _started(_admin(bootstrap), bootstrap) as admin:
        info = (await admin.describe_topics([name]))[0]
        configs = await _configs(admin, name)
    replicas = len(info["partitions"][0]["replicas"]) if info["partitions"] else 0
    lines = [f"topic {name}: {len(ends)} partitions, replication factor {replicas}",
             "configs: " + (" ".join(f"{k}={v}" for k, v in sorted(configs.items()))
                            or "(none set on the topic)"),
             "partition\tstart\tend\trecords"]
    lines += [f"{p}\t{starts[p]}\t{ends[p]}\t{ends[p] - starts[p]}" for p in sorted(ends)]
    lines.append(f"total\t\t\t{sum(ends[p] - starts[p] for p in ends)}")
    return lines


async def group_lag(bootstrap: str, group: str, topic: str) -> list[str]:
    """``group``'s committed offset, the end and the lag of each partition of ``topic``;
    a partition never committed lags from its log start."""
    starts, ends, committed = await _ends(bootstrap, topic, group)
    lines = [f"group {group} on topic {topic}", "partition\tcommitted\tend\tlag"]
    total = 0
    for p in sorted(ends):
        done = committed[p]
        lag = max(0, ends[p] - (starts[p] if done is None else done))
        total += lag
        lines.append(f"{p}\t{'-' if done is None else done}\t{ends[p]}\t{lag}")
    lines.append(f"total\t\t\t{total}")
    if all(c is None for c in committed.values()):
        lines.append(f"(group {group!r} has committed nothing on {topic!r})")
    return lines


def _bootstrap_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap", default=DEFAULT_BOOTSTRAP, metavar="HOST:PORT",
                        help=f"Kafka bootstrap servers (default {DEFAULT_BOOTSTRAP})")


def _topics_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="stormloop topics", description=(
        "Create, list and describe Kafka topics."))
    sub = parser.add_subparsers(dest="action", required=True)
    make = sub.add_parser("create", help="create a topic with N partitions", description=(
        "Create topic NAME with N partitions (the processes of a topology reading it split "
        "its partitions: past N, a process gets none). Refused if NAME exists."))
    make.add_argument("name")
    make.add_argument("--partitions", required=True, metavar="N",
                      help="number of partitions (1 or more)")
    make.add_argument("--replication-factor", default="1", metavar="R",
                      help="copies of each partition (default 1)")
    make.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                      help="a topic config, e.g. retention.ms=86400000 (repeatable)")
    listed = sub.add_parser("list", help="topics and their partition counts")
    listed.add_argument("--internal", action="store_true",
                        help="include the broker's own topics (names starting with __)")
    shown = sub.add_parser("describe", help="partitions, configs and end offsets of a topic",
                           description="A topic's partitions, its configs and, per "
                                       "partition, its log start, end and records held.")
    shown.add_argument("name")
    for p in (make, listed, shown):
        _bootstrap_option(p)
    return parser


def topics(args: list[str], out: IO[str] | None = None) -> int:
    """``stormloop topics``; returns the exit status."""
    options = _topics_parser().parse_args(args)

    async def main() -> list[str]:
        if options.action == "create":
            line = await create(options.bootstrap, options.name,
                                _count(options.partitions, "--partitions"),
                                _count(options.replication_factor, "--replication-factor"),
                                parse_configs(options.config))
            return [line]
        if options.action == "list":
            return await listing(options.bootstrap, options.internal)
        return await describe(options.bootstrap, options.name)

    return _run_printing("stormloop topics", main(), out)


def groups(args: list[str], out: IO[str] | None = None) -> int:
    """``stormloop groups``; returns the exit status."""
    parser = argparse.ArgumentParser(prog="stormloop groups", description=(
        "Look at a consumer group without joining it."))
    sub = parser.add_subparsers(dest="action", required=True)
    shown = sub.add_parser("describe", help="a group's committed offsets and lag on a topic",
                           description="GROUP's committed offset, the end and the lag of "
                                       "each partition of TOPIC (read without joining the "
                                       "group, so a running topology is not disturbed).")
    shown.add_argument("group")
    shown.add_argument("--topic", required=True)
    _bootstrap_option(shown)
    options = parser.parse_args(args)
    return _run_printing("stormloop groups",
                         group_lag(options.bootstrap, options.group, options.topic), out)


def _run_printing(prog: str, coro: Any, out: IO[str] | None) -> int:
    """``_run`` of ``coro``, printing the lines it returns."""
    lines: list[str] = []

    async def main() -> None:
        lines.extend(await coro)

    status = _run(prog, main())
    if status == 0:
        (out or sys.stdout).write("".join(line + "\n" for line in lines))
    return status
