"""What the HTTP endpoint costs: one scrape of a 100-component topology, and the word
count with ``/metrics`` scraped every second beside the same run without the endpoint.

    python scripts/bench_http.py [--sentences 100000] [--pairs 3] [--scrapes 50]

1. a topology of 100 components (10 spouts, 90 bolts in chains, two executors each) runs
   with traffic; a client process of its own fetches ``/metrics`` ``--scrapes`` times over
   HTTP and the time of each full request is reported (median and max; target: under
   50 ms), with the JSON topology view beside it;
2. word-count pairs (endpoint off, endpoint on and scraped every second by a client
   thread), each run in a fresh process; prints both rates and the median on/off ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchlib import WORDS_PER_SENTENCE, make_sentences, run_loop, word_count_topology
from prometheus_client import generate_latest

from connectors.memory import ListSpout
from engine import Bolt, Config, LocalCluster, TopologyBuilder
from engine.gc_tuning import tune_gc
from engine.observe.metrics import registry_for
from engine.observe.observer import Observer
from engine.testing import wait_until

SPOUTS, CHAIN = 10, 9  # 10 spouts, each feeding a chain of 9 bolts: 100 components


class Relay(Bolt):
    """Re-emits its input anchored, acks it."""

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["sentence"])

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        self.collector.emit([tup[0]], anchors=tup)
        self.collector.ack(tup)


def hundred_components() -> Any:
    """10 spouts, each feeding a chain of 9 relays; two executors per component."""
    b = TopologyBuilder()
    rows = [["a b c"]] * 1000
    for s in range(SPOUTS):
        b.set_spout(f"spout-{s}", ListSpout(rows, ["sentence"], repeat=10**6, per_call=1), 2)
        upstream = f"spout-{s}"
        for k in range(CHAIN):
            cid = f"relay-{s}-{k}"
            b.set_bolt(cid, Relay(), 2).shuffle_grouping(upstream)
            upstream = cid
    return b.create_topology()


_CLIENT = """
import json, statistics, sys, time, urllib.request
times, size = [], 0
for _ in range(int(sys.argv[2])):
    start = time.perf_counter()
    with urllib.request.urlopen(sys.argv[1]) as resp:
        size = len(resp.read())
    times.append(time.perf_counter() - start)
print(json.dumps([statistics.median(times) * 1000, max(times) * 1000, size]))
"""


async def _time_gets(url: str, n: int) -> tuple[float, float, int]:
    """GET ``url`` ``n`` times from a client process of its own, as a Prometheus server
    scrapes: median and max milliseconds per full request, and the body's size. (A
    client thread in this process would measure its own waits for the interpreter lock
    beside a busy loop, not the endpoint.)"""
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", _CLIENT, url, str(n),
                                                stdout=asyncio.subprocess.PIPE)
    out, _ = await proc.communicate()
    if proc.returncode:
        raise RuntimeError(f"scrape client exited with {proc.returncode}")
    median, worst, size = json.loads(out)
    return median, worst, size


def _collect_cpu_ms(registry: Any, scrapes: int) -> float:
    """Median CPU milliseconds of building the exposition in the loop's thread."""
    times = []
    for _ in range(scrapes):
        start = time.thread_time()
        generate_latest(registry)
        times.append(time.thread_time() - start)
    return statistics.median(times) * 1000


async def _scrape_timing(scrapes: int) -> dict[str, Any]:
    conf = Config({"topology.max.spout.pending": 20})
    async with LocalCluster() as cluster:
        topology = hundred_components()
        await cluster.submit_topology("hundred", conf, topology)
        server = await cluster.serve_http()
        try:
            await asyncio.sleep(1.0)
            metrics = await _time_gets(server.url + "metrics", scrapes)
            api = await _time_gets(server.url + "api/v1/topology/hundred?window=600", scrapes)
            cpu = _collect_cpu_ms(registry_for(Observer(cluster)), scrapes)
        finally:
            await server.close()
        await cluster.kill_topology("hundred")
    return {"components": len(topology.components), "metrics_bytes": metrics[2],
            "cpu_ms": cpu, "metrics_ms": metrics[:2], "api_ms": api[:2]}


class _Scraper(threading.Thread):
    """GET ``url`` once a second until stopped (a Prometheus server's part)."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.stop = threading.Event()
        self.count = 0

    def run(self) -> None:
        while not self.stop.wait(1.0):
            with urllib.request.urlopen(self.url) as resp:
                resp.read()
            self.count += 1


async def _word_count(n: int, http: bool) -> float:
    sentences = make_sentences(n)
    spout = ListSpout([[s] for s in sentences], ["sentence"], repeat=1, per_call=10)
    conf = Config({"topology.max.spout.pending": 5000})
    async with LocalCluster() as cluster:
        server = await cluster.serve_http() if http else None
        scraper = _Scraper(server.url + "metrics") if server else None
        start = time.perf_counter()
        await cluster.submit_topology("wc", conf, word_count_topology(spout, 1))
        tune_gc()
        if scraper:
            scraper.start()
        words = n * WORDS_PER_SENTENCE
        await wait_until(lambda: len(spout.acked) == n, timeout=600, interval=0.01)
        elapsed = time.perf_counter() - start
        if scraper:
            scraper.stop.set()
            await asyncio.get_running_loop().run_in_executor(None, scraper.join)
            assert scraper.count >= int(elapsed) - 1, "the scraper fell behind"
        if server:
            await server.close()
    return words / elapsed


def _child(n: int, mode: str) -> float:
    out = subprocess.run([sys.executable, __file__, "--child", mode, "--sentences", str(n)],
                         capture_output=True, text=True, check=True)
    return float(out.stdout.split()[-1])


def main() -> None:
    """Parse arguments, run both measurements, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=100_000)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--scrapes", type=int, default=50)
    parser.add_argument("--child", choices=("on", "off"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(run_loop(_word_count(args.sentences, args.child == "on")))
        return
    t = run_loop(_scrape_timing(args.scrapes))
    print(f"scrape of {t['components']} components ({t['metrics_bytes']:,} bytes): "
          f"/metrics over HTTP median {t['metrics_ms'][0]:.1f} ms, max "
          f"{t['metrics_ms'][1]:.1f} ms (target < 50 ms); CPU to build it in the loop "
          f"{t['cpu_ms']:.1f} ms; JSON view median {t['api_ms'][0]:.1f} ms, "
          f"max {t['api_ms'][1]:.1f} ms")
    pairs = [(_child(args.sentences, "off"), _child(args.sentences, "on"))
             for _ in range(args.pairs)]
    ratios = sorted(on / off for off, on in pairs)
    for off, on in pairs:
        print(f"word count: endpoint off {off:,.0f} words/s, on and scraped every second "
              f"{on:,.0f} words/s")
    print(f"median on/off: {ratios[len(ratios) // 2]:.3f} (target >= 0.97); best off "
          f"{max(p[0] for p in pairs):,.0f}, best on {max(p[1] for p in pairs):,.0f} words/s")


if __name__ == "__main__":
    main()
