"""Topologies and an HTTP client shared by the observability tests."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType
from typing import Any

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from engine import Bolt, Config, LocalCluster, Spout, Topology, TopologyBuilder
from engine.keyed.hops import reader_id, writer_id
from engine.testing import FeederSpout, wait_until
from engine.topology import ComponentDef
from topologies.word_count import build as build_word_count


def word_count(sentences: int = 300, repeat: int = 4) -> tuple[Config, Topology]:
    """The shipped word count, finite and quiet."""
    conf = Config({"wordcount.sentences": sentences, "wordcount.repeat": repeat,
                   "wordcount.top": 0, "topology.max.spout.pending": 500})
    return conf, build_word_count(conf)


class Judge(Bolt):
    """Acks ``ok``, fails ``fail`` explicitly, raises on ``boom``, never acks ``hold``."""

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        verdict = tup[0]
        if verdict == "fail":
            self.collector.fail(tup)
        elif verdict == "boom":
            raise ValueError(f"boom {tup[1]}")
        elif verdict == "ok":
            self.collector.ack(tup)


def judged(spout: FeederSpout) -> Topology:
    """``feed`` → ``judge``: each fed verdict decides its tree's fate."""
    b = TopologyBuilder()
    b.set_spout("feed", spout)
    b.set_bolt("judge", Judge()).shuffle_grouping("feed")
    return b.create_topology()


class PartitionSpout(Spout):
    """Emits nothing; reports Kafka-shaped ``metrics()`` the test can change."""

    def __init__(self) -> None:
        self.figures: dict[str, Any] = {
            "partitions": [{"topic": "sentences", "partition": 0, "committed": 90,
                            "high_watermark": 120, "lag": 30, "position": 100}],
            "failed_topic_records": 2, "failed_topic_retries": 1}

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["value"])

    def next_tuple(self) -> None:
        pass

    def metrics(self) -> dict[str, Any]:
        return self.figures


class BrokenMetrics(Bolt):
    """A bolt whose ``metrics()`` raises."""

    def execute(self, tup: Any) -> None:
        pass

    def metrics(self) -> dict[str, Any]:
        raise RuntimeError("no figures today")


async def get(url: str) -> tuple[int, str]:
    """Status and body of a GET."""
    async with aiohttp.ClientSession() as session, session.get(url) as resp:
        return resp.status, await resp.text()


async def get_json(url: str) -> tuple[int, Any]:
    """Status and decoded JSON body of a GET."""
    async with aiohttp.ClientSession() as session, session.get(url) as resp:
        return resp.status, await resp.json()


async def scrape_finished_word_count(sentences: int, repeat: int) -> dict[str, Any]:
    """``/metrics`` of a word count run to its end, parsed."""
    conf, topology = word_count(sentences=sentences, repeat=repeat)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("wc", conf, topology)
        await wait_until(lambda: cluster.finished("wc"))
        server = await cluster.serve_http()
        try:
            return await scrape(server.url)
        finally:
            await server.close()


async def scrape(url: str) -> dict[str, Any]:
    """``/metrics`` parsed by prometheus_client: ``{family name: family}``."""
    status, body = await get(url + "metrics")
    assert status == 200
    return {f.name: f for f in text_string_to_metric_families(body)}


def sample(families: dict[str, Any], family: str, **labels: str) -> float:
    """The one sample of ``family`` (its ``_total`` for counters) with ``labels``."""
    found = [s.value for s in families[family].samples
             if all(s.labels.get(k) == v for k, v in labels.items())
             and not s.name.endswith("_created")]
    assert len(found) == 1, f"{family} {labels}: {len(found)} samples"
    return found[0]


class Endless(Spout):
    """Emits ``[n]`` for n = 0, 1, 2 ... as tracked tuples, for as long as it runs."""

    def __init__(self) -> None:
        self.n = 0

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["n"])

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def next_tuple(self) -> None:
        self.n += 1
        self.collector.emit([self.n], msg_id=self.n)


class Relay(Bolt):
    """Passes each tuple on, anchored; fails (instead) those where ``fails(n)`` holds."""

    def __init__(self, fails: Any = None) -> None:
        self.fails = fails

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["n"])

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        if self.fails is not None and self.fails(tup[0]):
            self.collector.fail(tup)
            return
        self.collector.emit([tup[0]], anchors=[tup])
        self.collector.ack(tup)


LONG_NAME = "join-orders-with-payments-by-customer-and-day"
ALARMED = "fraud-check"


def pipeline() -> tuple[Config, Topology]:
    """Eight components in five stages, some with long names; ``fraud-check`` fails five
    tuples in six (83 %). Its spouts never run out."""
    b = TopologyBuilder()
    b.set_spout("orders-from-the-web-shop", Endless())
    b.set_spout("payments", Endless())
    b.set_bolt("parse-and-validate-order-json", Relay()).shuffle_grouping(
        "orders-from-the-web-shop")
    b.set_bolt("enrich-payment", Relay()).shuffle_grouping("payments")
    b.set_bolt(LONG_NAME, Relay(), 2).fields_grouping(
        "parse-and-validate-order-json", ["n"]).fields_grouping("enrich-payment", ["n"])
    b.set_bolt(ALARMED, Relay(fails=lambda n: n % 6 != 0)).shuffle_grouping(LONG_NAME)
    b.set_bolt("totals", Relay()).shuffle_grouping(LONG_NAME)
    b.set_bolt("write-to-the-warehouse-sink", Relay()).shuffle_grouping(ALARMED) \
        .shuffle_grouping("totals")
    return Config({"topology.max.spout.pending": 200}), b.create_topology()


def with_engine_ids(topology: Topology, names: dict[str, str]) -> Topology:
    """``topology`` with components renamed by ``names`` (to ids starting with ``__``,
    which only the engine may give, as ``with_hops`` does)."""

    def renamed(d: ComponentDef) -> ComponentDef:
        inputs = tuple(replace(s, source=names.get(s.source, s.source)) for s in d.inputs)
        return replace(d, id=names.get(d.id, d.id), inputs=inputs)

    return Topology(MappingProxyType({names.get(cid, cid): renamed(d)
                                      for cid, d in topology.components.items()}))


def scaled_out() -> tuple[Config, Topology]:
    """The word count's shape behind a repartition hop, without Kafka: ``sentences`` →
    ``split`` → the hop's writer; the hop's reader → ``count`` (fields) → ``counts``. The
    spouts never run out."""
    b = TopologyBuilder()
    b.set_spout("sentences", Endless())
    b.set_spout("reader", Endless())
    b.set_bolt("split", Relay(), 2).shuffle_grouping("sentences")
    b.set_bolt("count", Relay(), 2).fields_grouping("reader", ["n"])
    b.set_bolt("counts", Relay(), 2).fields_grouping("count", ["n"])
    b.set_bolt("writer", Relay()).local_or_shuffle_grouping("split")
    topology = with_engine_ids(b.create_topology(), {"reader": reader_id("count"),
                                                     "writer": writer_id("count")})
    return Config({"topology.max.spout.pending": 200}), topology
