"""Topologies and an HTTP client shared by the observability tests."""

from __future__ import annotations

from typing import Any

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from engine import Bolt, Config, LocalCluster, Spout, Topology, TopologyBuilder
from engine.testing import FeederSpout, wait_until
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
