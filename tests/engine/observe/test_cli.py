"""``run --http``, and the status line: ``-`` for unknown figures, timeouts and
failed-topic records counted apart."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from pathlib import Path

from engine import Config, LocalCluster, TopologyBuilder
from engine.cli import _status
from engine.testing import FeederSpout, wait_until
from tests.engine.observe.helpers import PartitionSpout, get, judged, scrape

ROOT = Path(__file__).resolve().parents[3]


async def test_run_with_http_prints_the_bound_address_and_serves() -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "engine", "run", "topologies/word_count.py", "--http", "0",
        "--conf", "wordcount.sentences=2000", "--conf", "wordcount.repeat=1000",
        "--conf", "wordcount.top=0", "--duration", "30", "--status-interval", "100",
        cwd=ROOT, stderr=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL)
    assert proc.stderr is not None
    try:
        line = (await asyncio.wait_for(proc.stderr.readline(), 30)).decode()
        found = re.match(r"http: serving (http://127\.0\.0\.1:(\d+)/) ", line)
        assert found, line
        url = found.group(1)
        assert int(found.group(2)) > 0
        await wait_until_ready(url)
        families = await scrape(url)
        assert families["stormloop_tuples_acked"].samples
    finally:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), 30)
    assert proc.returncode == 0


async def wait_until_ready(url: str) -> None:
    for _ in range(200):
        if (await get(url + "readyz"))[0] == 200:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("never ready")


def test_error_texts_are_served_over_http_only_with_the_flag() -> None:
    from engine.cli import _parser

    assert not _parser().parse_args(["run", "t.py", "--http", "0"]).http_show_errors
    assert _parser().parse_args(["run", "t.py", "--http", "0",
                                 "--http-show-errors"]).http_show_errors


def test_bad_http_address_is_a_usage_error() -> None:
    proc = subprocess.run([sys.executable, "-m", "engine", "run", "topologies/word_count.py",
                           "--http", "localhost:http"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2
    assert "--http: expected [HOST:]PORT with PORT 0-65535, got 'localhost:http'" in proc.stderr


async def test_status_line_shows_dash_for_unknown_latency_and_counts_apart() -> None:
    spout = FeederSpout(["verdict", "n"])
    for i, verdict in enumerate(["fail", "hold", "hold"]):
        spout.feed([verdict, i], msg_id=i)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("j", Config({"topology.message.timeout.secs": 0.3}),
                                      judged(spout))
        fresh = _status("j", cluster.stats("j"), {"feed"}, {"acked": 0.0, "t": 0.0})
        await wait_until(lambda: len(spout.events) == 3, timeout=5)
        decided = _status("j", cluster.stats("j"), {"feed"}, {"acked": 0.0, "t": 0.0})
    assert "latency p50=- p99=-" in decided  # nothing acked, nothing sampled
    assert "failed=1 timeouts=2 " in decided
    assert "None" not in fresh + decided
    assert "failed-topic" not in decided  # no component reports a failed topic


async def test_status_line_counts_failed_topic_records() -> None:
    b = TopologyBuilder()
    b.set_spout("kafka", PartitionSpout(), 2)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("k", Config(), b.create_topology())
        line = _status("k", cluster.stats("k"), {"kafka"}, {"acked": 0.0, "t": 0.0})
    assert "failed=0 timeouts=0 failed-topic=4 " in line  # 2 records from each task
