"""A relay for the process-level tests: Kafka topic → (optionally slow) bolt → Kafka topic.

    python -m engine run tests/connectors/kafka/relay_topology.py \\
        --conf kafka.bootstrap.servers=HOST:PORT --conf relay.source=IN --conf relay.sink=OUT \\
        --conf relay.group=G [--conf relay.delay.secs=0.002] [--conf relay.trace=FILE] \\
        [--conf relay.keyed=true] [--conf relay.session.timeout.ms=2000]

Each record's key and value are written unchanged to the sink, so a test can tell exactly
which inputs reached the output and how often. With ``relay.keyed`` the relay takes its
input with a fields grouping on ``key`` (across processes when ``topology.workers`` > 1).
With ``relay.trace``, every record's path is appended to FILE, one line per event, written
at once (a SIGKILL loses none):
``<epoch secs> <pid> <event> <details>`` with the events ``emit`` and ``ack``/``fail``
(source coordinates and value), ``produced``/``produce-failed`` (value and sink
coordinates, or the error) and ``log`` (the spout's lines on assignments, revokes and
``committed {...}``, the offsets each commit landed).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import Any, TextIO

from connectors.kafka import KafkaBolt, KafkaSpout
from connectors.kafka.kafka_errors import describe
from engine import BasicBolt, Config, Topology, TopologyBuilder

CONF: dict[str, Any] = {
    "relay.delay.secs": 0.0,
    "relay.trace": "",
    "relay.keyed": False,
    "relay.session.timeout.ms": 2000,
    "topology.max.spout.pending": 200,
    "topology.message.timeout.secs": 10,
}


class Trace:
    """Appends one line per event to a file, handed to the OS line by line."""

    def __init__(self, path: str) -> None:
        self._file: TextIO = open(path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115
        self._pid = os.getpid()

    def __call__(self, event: str, details: str) -> None:
        self._file.write(f"{time.time():.6f} {self._pid} {event} {details}\n")


class _TraceHandler(logging.Handler):
    """Log lines into the trace, as ``log`` events."""

    def __init__(self, trace: Trace) -> None:
        super().__init__(logging.DEBUG)
        self._trace = trace

    def emit(self, record: logging.LogRecord) -> None:
        self._trace("log", record.getMessage())


class _TracedCollector:
    """The spout's collector, tracing every emit."""

    def __init__(self, collector: Any, trace: Trace) -> None:
        self._collector, self._trace = collector, trace

    def emit(self, values: list[Any], msg_id: Any = None, *args: Any, **kwargs: Any) -> Any:
        self._trace("emit", f"{_where(msg_id)} {values[-1]!r}")
        return self._collector.emit(values, msg_id, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._collector, name)


def _where(msg_id: Any) -> str:
    topic, partition, offset = msg_id
    return f"{topic}[{partition}]@{offset}"


class TracedSpout(KafkaSpout):
    """A ``KafkaSpout`` that traces emits, acks and fails."""

    trace: Trace

    async def open(self, conf: Any, context: Any, collector: Any) -> None:
        await super().open(conf, context, _TracedCollector(collector, self.trace))

    def ack_many(self, msg_ids: list[Any]) -> None:
        for msg_id in msg_ids:
            self.trace("ack", _where(msg_id))
        super().ack_many(msg_ids)

    def fail(self, msg_id: Any, reason: Any = None) -> None:
        self.trace("fail", f"{_where(msg_id)} {getattr(reason, 'message', reason)}")
        super().fail(msg_id, reason)


class TracedBolt(KafkaBolt):
    """A ``KafkaBolt`` that traces where each record was stored, or why not."""

    trace: Trace

    def _batch_delivered(self, tuples: list[Any], future: Any) -> None:
        exc = None if future.cancelled() else future.exception()
        meta = None if exc is not None or future.cancelled() else future.result()
        for i, tup in enumerate(tuples):
            if meta is not None:
                self.trace("produced", f"{tup['value']!r} {meta.topic}[{meta.partition}]"
                                       f"@{meta.offset + i}")
            else:
                self.trace("produce-failed", f"{tup['value']!r} "
                                             f"{describe(exc) if exc else 'cancelled'}")
        super()._batch_delivered(tuples, future)


def _tracing(path: str) -> Trace:
    """A trace to ``path``, also fed the spout's commits and rebalance lines."""
    trace = Trace(path)
    commits = logging.getLogger("connectors.kafka.commits")
    commits.setLevel(logging.DEBUG)
    commits.propagate = False  # into the trace only, not the process's log
    commits.addHandler(_TraceHandler(trace))
    rebalances = _TraceHandler(trace)
    rebalances.addFilter(lambda r: "partitions" in r.getMessage())
    logging.getLogger("connectors.kafka").addHandler(rebalances)
    return trace


class Relay(BasicBolt):
    """Re-emits ``(key, value)``, after ``delay`` seconds."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["key", "value"])

    async def execute(self, tup: Any, collector: Any) -> None:
        if self.delay:
            await asyncio.sleep(self.delay)
        collector.emit([tup["key"], tup["value"]])


def build(conf: Config) -> Topology:
    """Source → relay (2 tasks) → sink, with a fast-joining consumer group; traced with
    ``relay.trace``."""
    bootstrap = str(conf["kafka.bootstrap.servers"])
    path = str(conf.get("relay.trace") or "")
    spout_class, bolt_class = (TracedSpout, TracedBolt) if path else (KafkaSpout, KafkaBolt)
    spout = spout_class(str(conf["relay.source"]), bootstrap, str(conf["relay.group"]),
                        value_format="bytes", commit_interval_secs=0.2,
                        session_timeout_ms=int(conf["relay.session.timeout.ms"]),
                        heartbeat_interval_ms=250,
                        auto_offset_reset="earliest")
    builder = TopologyBuilder()
    builder.set_spout("source", spout)
    relay = builder.set_bolt("relay", Relay(float(conf["relay.delay.secs"])), 2)
    if conf["relay.keyed"]:
        relay.fields_grouping("source", ["key"])
    else:
        relay.shuffle_grouping("source")
    sink = bolt_class(str(conf["relay.sink"]), bootstrap, key_field="key",
                      value_field="value", value_format="bytes")
    if path:
        spout.trace = sink.trace = _tracing(path)
    builder.set_bolt("sink", sink, 2).shuffle_grouping("relay")
    return builder.create_topology()
