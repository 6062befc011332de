"""``/metrics`` scraped while topologies run, parsed with prometheus_client's parser."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from connectors.memory import ListSpout
from engine import Bolt, Config, LocalCluster, TopologyBuilder
from engine.state import StatefulBolt
from engine.testing import FeederSpout, wait_until
from tests.engine.observe.helpers import (
    BrokenMetrics,
    PartitionSpout,
    judged,
    sample,
    scrape,
    scrape_finished_word_count,
    word_count,
)


async def test_acked_counters_agree_with_stats_while_word_count_runs() -> None:
    trees = 1000 * 20
    conf, topology = word_count(sentences=1000, repeat=20)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("wc", conf, topology)
        server = await cluster.serve_http()
        try:
            scraped_while_running = 0
            while not cluster.finished("wc"):
                before = cluster.stats("wc")["components"]
                families = await scrape(server.url)
                after = cluster.stats("wc")["components"]
                for cid in ("sentences", "split", "count"):
                    acked = sample(families, "stormloop_tuples_acked", topology="wc",
                                   component=cid)
                    assert before[cid]["acked"] <= acked <= after[cid]["acked"]
                if after["sentences"]["acked"] < trees:
                    scraped_while_running += 1
                await asyncio.sleep(0.02)
            assert scraped_while_running >= 2
            families = await scrape(server.url)
            stats = cluster.stats("wc")
            for cid, comp in stats["components"].items():
                keys = ("acked", "errors") if cid == "__acker" else ("acked", "emitted",
                                                                     "transferred", "errors")
                for key in keys:
                    assert sample(families, f"stormloop_tuples_{key}" if key != "errors"
                                  else "stormloop_errors", topology="wc",
                                  component=cid) == comp[key], (cid, key)
            assert stats["components"]["sentences"]["acked"] == trees
            assert sample(families, "stormloop_tuples_executed", topology="wc",
                          component="count") == stats["components"]["count"]["executed"]
        finally:
            await server.close()


async def test_every_family_is_prefixed_and_counters_end_in_total() -> None:
    families = await scrape_finished_word_count(sentences=50, repeat=1)
    for name, family in families.items():
        assert name.startswith(("stormloop_", "process_", "python_")), name
        if family.type == "counter":
            assert all(s.name.endswith(("_total", "_created")) for s in family.samples)
        if "latency" in name:
            assert name.endswith("_seconds") and family.type == "histogram"
        assert family.samples, f"{name} has no series"
    # The standard collectors beside the engine's own.
    for needed in ("process_cpu_seconds", "process_resident_memory_bytes", "python_info",
                   "python_gc_collections"):
        assert families[needed].samples, needed
    # No Kafka in this topology: no Kafka families, not even empty ones.
    assert not [name for name in families if name.startswith("stormloop_kafka_")]
    for needed in ("stormloop_tuples_emitted", "stormloop_tuples_transferred",
                   "stormloop_tuples_executed", "stormloop_tuples_acked",
                   "stormloop_tuples_failed", "stormloop_complete_latency_seconds",
                   "stormloop_execute_latency_seconds", "stormloop_process_latency_seconds",
                   "stormloop_pending_trees", "stormloop_spout_pending",
                   "stormloop_in_flight_limit", "stormloop_capacity",
                   "stormloop_queue_fill_ratio", "stormloop_errors"):
        assert families[needed].samples, needed
    words = 50 * 10
    execute = [s for s in families["stormloop_execute_latency_seconds"].samples
               if s.labels["component"] == "count" and s.name.endswith("_count")]
    assert sum(s.value for s in execute) == words
    complete = families["stormloop_complete_latency_seconds"].samples
    buckets = [s for s in complete if s.name.endswith("_bucket")]
    counts = [s.value for s in buckets]
    assert buckets[-1].labels["le"] == "+Inf" and counts == sorted(counts)  # cumulative
    assert counts[-1] == sample(families, "stormloop_complete_latency_seconds",
                                topology="wc", le="+Inf")
    assert counts[-1] == next(s.value for s in complete if s.name.endswith("_count")) > 0
    # Flow control's limit in force, under the max.spout.pending cap.
    assert 0 < sample(families, "stormloop_in_flight_limit", topology="wc",
                      component="sentences") <= 500


async def test_timeouts_explicit_fails_and_errors_have_their_own_reason() -> None:
    spout = FeederSpout(["verdict", "n"])
    verdicts = ["ok"] * 5 + ["fail"] * 3 + ["boom"] * 2 + ["hold"] * 4
    for i, verdict in enumerate(verdicts):
        spout.feed([verdict, i], msg_id=i)
    async with LocalCluster() as cluster:
        conf = Config({"topology.message.timeout.secs": 0.3})
        await cluster.submit_topology("judged", conf, judged(spout))
        server = await cluster.serve_http()
        try:
            await wait_until(lambda: len(spout.events) == len(verdicts), timeout=5)
            families = await scrape(server.url)
            stats = cluster.stats("judged")
        finally:
            await server.close()

    def failed(reason: str) -> float:
        return sample(families, "stormloop_tuples_failed", topology="judged",
                      component="feed", reason=reason)

    assert failed("timeout") == 4
    assert failed("explicit") + failed("error") == 5
    if "failed_error" in stats["components"]["feed"]:  # spouts counting fails by kind
        assert (failed("explicit"), failed("error")) == (3, 2)
    assert sample(families, "stormloop_tuples_acked", topology="judged", component="feed") == 5
    assert sample(families, "stormloop_errors", topology="judged", component="judge") == 2
    # The acker fails trees itself only by timing them out: its one series counts those.
    acker = [(s.labels["reason"], s.value) for s in families["stormloop_tuples_failed"].samples
             if s.labels["component"] == "__acker" and s.name.endswith("_total")]
    assert acker == [("timeout", 4)]


async def test_kafka_partition_figures_come_from_metrics_and_a_broken_one_is_left_out(
        caplog: Any) -> None:
    b = TopologyBuilder()
    spout = PartitionSpout()
    b.set_spout("kafka", spout)
    b.set_bolt("broken", BrokenMetrics()).shuffle_grouping("kafka")
    async with LocalCluster() as cluster:
        await cluster.submit_topology("k", Config(), b.create_topology())
        server = await cluster.serve_http()
        try:
            with caplog.at_level(logging.WARNING, logger="engine.observe"):
                families = await scrape(server.url)
                await scrape(server.url)
        finally:
            await server.close()
    labels = {"topology": "k", "component": "kafka", "topic": "sentences", "partition": "0"}
    # A partition's series carry no task: they keep their identity across a rebalance.
    assert "task" not in families["stormloop_kafka_partition_lag"].samples[0].labels
    assert sample(families, "stormloop_kafka_partition_lag", **labels) == 30
    assert sample(families, "stormloop_kafka_committed_offset", **labels) == 90
    assert sample(families, "stormloop_kafka_high_watermark", **labels) == 120
    assert sample(families, "stormloop_kafka_failed_topic_records", component="kafka") == 2
    assert sample(families, "stormloop_kafka_failed_topic_retries", component="kafka") == 1
    warnings = [r for r in caplog.records if "metrics() failed" in r.getMessage()]
    assert len(warnings) == 1  # throttled: two scrapes, one line
    assert "'broken'" in warnings[0].getMessage()
    assert "RuntimeError: no figures today" in warnings[0].getMessage()


async def test_latency_histograms_of_two_processes_add_up() -> None:
    """Two runs stand for two worker processes: their buckets, sums and counts add up to
    a histogram of the same shape, which summaries' quantiles could not."""
    scraped = [await scrape_finished_word_count(sentences=40, repeat=1) for _ in range(2)]

    def series(families: dict[str, Any]) -> dict[tuple[str, str], float]:
        return {(s.name, s.labels.get("le", "")): s.value
                for s in families["stormloop_execute_latency_seconds"].samples
                if s.labels["component"] == "split"}

    first, second = (series(f) for f in scraped)
    assert first.keys() == second.keys()
    summed = {key: first[key] + second[key] for key in first}
    assert summed[("stormloop_execute_latency_seconds_count", "")] == 80
    assert summed[("stormloop_execute_latency_seconds_bucket", "+Inf")] == 80


class CountingBolt(Bolt):
    """Acks each tuple and counts it in its ``metrics()``."""

    def declare_output_fields(self, declarer: Any) -> None:
        pass

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector
        self.seen = 0

    def execute(self, tup: Any) -> None:
        self.seen += 1
        self.collector.ack(tup)

    def metrics(self) -> dict[str, Any]:
        return {"seen": getattr(self, "seen", 0)}


class Remember(StatefulBolt):
    """Passes each word on, anchored, after noting it in its state."""

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"])

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def init_state(self, state: Any) -> None:
        self.state = state

    def execute(self, tup: Any) -> None:
        self.state.put(tup[0], 1)
        self.collector.emit([tup[0]], anchors=tup)
        self.collector.ack(tup)


async def test_a_bolts_metrics_come_from_its_running_task_in_a_stateful_topology(
        tmp_path: Any) -> None:
    """In a stateful topology an engine wrapper runs each bolt task's copy; the figures
    report that copy's metrics, not the never-run template's."""
    b = TopologyBuilder()
    b.set_spout("words", ListSpout([[f"w{i}"] for i in range(50)], ["word"]))
    b.set_bolt("remember", Remember()).shuffle_grouping("words")
    b.set_bolt("counting", CountingBolt(), 2).shuffle_grouping("remember")
    conf = Config({"topology.state.dir": str(tmp_path),
                   "topology.state.checkpoint.interval.ms": 50})
    async with LocalCluster() as cluster:
        await cluster.submit_topology("m", conf, b.create_topology())
        await wait_until(lambda: cluster.stats("m")["components"]["words"]["acked"] == 50,
                         timeout=30)
        metrics = cluster.stats("m")["metrics"]["counting"]
    assert len(metrics) == 2 and all(m["seen"] > 0 for m in metrics.values())
    # At least once: a replay (a checkpoint rolled back on a busy machine) counts again.
    assert sum(m["seen"] for m in metrics.values()) >= 50
