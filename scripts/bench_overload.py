"""The engine under overload and stuck user code, each scenario in a fresh process.

    PYTHONPATH=$PWD python scripts/bench_overload.py [--duration 60] [--only a,b,c,d]

a. a bolt at 1 ms per tuple (``await asyncio.sleep(0.001)``, I/O-bound user code, which
   lets the spout run meanwhile; ``--bolt busy`` makes it a sync 1 ms busy-wait instead),
   message timeout 2 s, behind a spout that replays what fails (as a Kafka spout does),
   with the default config and with topology.max.spout.pending 50,000: goodput (trees
   acked per second) against the bolt's capacity (1 / its measured mean execute time), and
   the share of executions spent on tuples whose tree had already timed out (started more
   than the timeout after their emit);
b. a bolt with 2 executors under shuffle grouping whose task 0 runs ``await
   asyncio.sleep(3600)`` half-way through: the other task's executions per second before
   and after (default config);
c. 10 MB tuples behind a slow bolt (``await asyncio.sleep(0.05)`` per tuple), default config:
   peak RSS of the process (stopped early, and reported as a lower bound, at --rss-cap-gb);
   ``--stages N`` puts N - 1 bolts before the slow one, each emitting a fresh 10 MB value
   anchored to its input (values the spout's bound in bytes does not weigh), and
   ``--max-pending-bytes`` sets topology.spout.max.pending.bytes (``none``: unbounded);
d. acker memory: an ``AckLedger`` fed 60,000 trees/s for 30 s of simulated time, timeout
   30 s, every tree acked in the next batch (nothing pending): bytes it still holds
   (tracemalloc).

The table puts each figure beside its target (ok / MISS).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import subprocess
import sys
import threading
import time
import tracemalloc
from collections import deque
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine import Bolt, Config, LocalCluster, Spout, TopologyBuilder  # noqa: E402
from engine.hotpath import compiled  # noqa: E402

EXECUTE_SECS = 0.001
TIMEOUT_SECS = 2
PAYLOAD = 10 * 1024 * 1024
BYTES_KEY = "topology.spout.max.pending.bytes"


class ReplaySpout(Spout):
    """Emits new ids, replaying failed ones first; each tuple carries its emit time."""

    def __init__(self, counts: dict[str, int], payload: int = 0, per_call: int = 10) -> None:
        self.counts = counts  # shared by the task copies
        self.payload = payload
        self.per_call = per_call

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["id", "emitted", "payload"])

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector
        self.replay: deque[int] = deque()
        self.next_id = 0

    def next_tuple(self) -> None:
        now = time.perf_counter()
        for _ in range(self.per_call):
            if self.replay:
                i = self.replay.popleft()
            else:
                i, self.next_id = self.next_id, self.next_id + 1
            data = b"x" * self.payload if self.payload else b""  # touched: counts in RSS
            self.collector.emit([i, now, data], msg_id=i)
            self.counts["emitted"] += 1

    def ack(self, msg_id: Any) -> None:
        self.counts["acked"] += 1

    def fail(self, msg_id: Any) -> None:
        self.counts["failed"] += 1
        self.replay.append(msg_id)


class SlowBolt(Bolt):
    """Takes ``secs`` per tuple, then acks; counts executions on already timed-out trees."""

    def __init__(self, counts: dict[str, Any], secs: float, timeout: float) -> None:
        self.counts = counts
        self.secs = secs
        self.timeout = timeout

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def _start(self, tup: Any) -> float:
        start = time.perf_counter()
        self.counts["executed"] += 1
        if start - tup.values[1] >= self.timeout:
            self.counts["wasted"] += 1
        return start

    def _done(self, tup: Any, start: float) -> None:
        self.counts["busy_secs"] += time.perf_counter() - start
        self.collector.ack(tup)


class SleepingSlowBolt(SlowBolt):
    """1 ms of waiting per tuple: the loop runs other tasks meanwhile."""

    async def execute(self, tup: Any) -> None:
        start = self._start(tup)
        await asyncio.sleep(self.secs)
        self._done(tup, start)


class BusySlowBolt(SlowBolt):
    """1 ms of CPU per tuple: the loop is held."""

    def execute(self, tup: Any) -> None:
        start = self._start(tup)
        while time.perf_counter() - start < self.secs:
            pass
        self._done(tup, start)


class HangingBolt(Bolt):
    """Acks at once, recording each task's execute times; task 0 hangs at ``hang_at``."""

    def __init__(self, times: dict[int, list[float]], hang_at: float) -> None:
        self.times = times
        self.hang_at = hang_at

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector
        self.index = context.task_index
        self.mine = self.times.setdefault(self.index, [])

    async def execute(self, tup: Any) -> None:
        now = time.perf_counter()
        if self.index == 0 and now >= self.hang_at:
            await asyncio.sleep(3600)
        self.mine.append(now)
        self.collector.ack(tup)


class CopyBolt(Bolt):
    """Emits a fresh copy of the payload (one more value of its size), anchored, and acks."""

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["id", "emitted", "payload"])

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        i, emitted, data = tup.values
        self.collector.emit([i, emitted, data[:-1] + b"y"], anchors=tup)
        self.collector.ack(tup)


class SleepyBolt(Bolt):
    """Waits ``secs`` per tuple without holding the loop (I/O-bound user code), then acks."""

    def __init__(self, secs: float) -> None:
        self.secs = secs

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    async def execute(self, tup: Any) -> None:
        await asyncio.sleep(self.secs)
        self.collector.ack(tup)


def _max_bytes(text: str) -> int | None:
    """``--max-pending-bytes``: -1 for the engine's default, None for no bound."""
    return -1 if text == "default" else None if text == "none" else int(text)


def _run_loop(coro: Any) -> Any:
    import uvloop

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(coro)


async def _slow_bolt(duration: float, pending: int | None, busy: bool) -> dict[str, Any]:
    counts: dict[str, Any] = {"emitted": 0, "acked": 0, "failed": 0, "executed": 0,
                              "wasted": 0, "busy_secs": 0.0}
    b = TopologyBuilder()
    b.set_spout("s", ReplaySpout(counts))
    bolt = (BusySlowBolt if busy else SleepingSlowBolt)(counts, EXECUTE_SECS, TIMEOUT_SECS)
    b.set_bolt("slow", bolt).shuffle_grouping("s")
    conf = Config({"topology.message.timeout.secs": TIMEOUT_SECS,
                   "topology.max.spout.pending": pending})
    async with LocalCluster() as cluster:
        await cluster.submit_topology("a", conf, b.create_topology())
        await asyncio.sleep(duration)
        stats = cluster.stats("a")
        counts = dict(counts)
        os_exit_after(counts | {"pending": stats["pending"]})
    raise AssertionError("unreachable")


async def _hung_executor(duration: float) -> dict[str, Any]:
    times: dict[int, list[float]] = {}
    start = time.perf_counter()
    hang_at = start + duration / 2
    b = TopologyBuilder()
    b.set_spout("s", ReplaySpout({"emitted": 0, "acked": 0, "failed": 0}))
    b.set_bolt("work", HangingBolt(times, hang_at), 2).shuffle_grouping("s")
    async with LocalCluster() as cluster:
        await cluster.submit_topology("b", Config(), b.create_topology())
        await asyncio.sleep(duration)
        end = time.perf_counter()
        stats = cluster.stats("b")
        settle = min(2.0, duration / 10)  # the neighbour's rate once the hang has bitten
        mine = times.get(1, [])
        before = sum(1 for t in mine if t < hang_at) / (hang_at - start)
        after = sum(1 for t in mine if t >= hang_at + settle) / (end - hang_at - settle)
        os_exit_after({"before_per_sec": before, "after_per_sec": after,
                       "status_acked": stats["components"]["s"].get("acked"),
                       "status_pending": stats["pending"]})
    raise AssertionError("unreachable")


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def _big_tuples(duration: float, cap: float, stages: int,
                      max_bytes: int | None) -> dict[str, Any]:
    peak = {"rss": _rss_bytes(), "capped": False}
    stop = threading.Event()

    def watch() -> None:  # a thread: sampling must go on while the loop is busy
        while not stop.wait(0.05):
            peak["rss"] = max(peak["rss"], _rss_bytes())
            if peak["rss"] >= cap:
                peak["capped"] = True
                os_exit_after({"peak_rss_bytes": peak["rss"], "capped": True,
                               "stages": stages})

    threading.Thread(target=watch, daemon=True).start()
    b = TopologyBuilder()
    counts = {"emitted": 0, "acked": 0, "failed": 0}
    b.set_spout("s", ReplaySpout(counts, payload=PAYLOAD, per_call=1))
    source = "s"
    for n in range(1, stages):
        b.set_bolt(f"copy{n}", CopyBolt()).shuffle_grouping(source)
        source = f"copy{n}"
    b.set_bolt("slow", SleepyBolt(0.05)).shuffle_grouping(source)
    conf = Config() if max_bytes == -1 else Config({BYTES_KEY: max_bytes})
    async with LocalCluster() as cluster:
        await cluster.submit_topology("c", conf, b.create_topology())
        limits = await _watch_limit(cluster, "c", "s", duration)
        stop.set()
        peak_rss = max(peak["rss"], resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
        os_exit_after({"peak_rss_bytes": peak_rss, "capped": False, "stages": stages,
                       "acked_per_sec": counts["acked"] / duration, **limits})
    raise AssertionError("unreachable")


async def _watch_limit(cluster: Any, name: str, spout: str, duration: float) -> dict[str, Any]:
    """Run for ``duration`` s, sampling the spout's trees in flight, their limit and the
    bytes they hold."""
    peak_pending = peak_limit = peak_bytes = 0
    end = time.perf_counter() + duration
    while time.perf_counter() < end:
        await asyncio.sleep(0.5)
        s = cluster.stats(name)["components"][spout]
        peak_pending = max(peak_pending, s.get("pending") or 0)
        peak_limit = max(peak_limit, s.get("in_flight_limit") or 0)
        peak_bytes = max(peak_bytes, s.get("pending_bytes") or 0)
    return {"peak_pending": peak_pending, "peak_limit": peak_limit, "peak_bytes": peak_bytes}


def acker_bytes_held(rate: int = 60_000, secs: float = 30.0, timeout: float = 30.0,
                     batch: int = 1000) -> dict[str, Any]:
    """tracemalloc bytes an ``AckLedger`` holds after ``secs`` at ``rate`` trees/s, every
    tree acked in the batch after its INIT (so at most ``batch`` pending at any time)."""
    from engine.acker import INIT, AckLedger

    rng = random.Random(7)
    step = batch / rate
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    ledger = AckLedger(timeout, now=0.0)
    prev: dict[int, int] = {}
    next_tick, now = 0.0, 0.0
    for i in range(int(rate * secs / batch)):
        now = i * step
        ops = [(INIT, rng.getrandbits(64) - (1 << 63), rng.getrandbits(64) | 1, 1)
               for _ in range(batch)]
        ledger.apply(ops, prev, now)
        prev = {op[1]: op[2] for op in ops}
        if now >= next_tick:
            ledger.expire(now)
            next_tick += ledger.tick
    ledger.apply([], prev, now + step)
    ledger.expire(now + step)
    del ops, prev
    held = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    return {"held_bytes": held, "pending": len(ledger), "acked": ledger.acked}


def os_exit_after(result: dict[str, Any]) -> None:
    """Print the child's result and leave at once (a hung task need not be torn down)."""
    result["hot_path"] = "compiled (mypyc)" if compiled() else "plain Python"
    print(json.dumps(result), flush=True)
    os._exit(0)


def child(name: str, args: argparse.Namespace) -> None:
    """Run one scenario in this process; prints one JSON line."""
    duration, cap, busy = args.duration, args.rss_cap_gb * 1e9, args.bolt == "busy"
    if name == "a-default":
        _run_loop(_slow_bolt(duration, None, busy))
    elif name == "a-pending":
        _run_loop(_slow_bolt(duration, 50_000, busy))
    elif name == "b":
        _run_loop(_hung_executor(duration))
    elif name == "c":
        _run_loop(_big_tuples(duration, cap, args.stages, _max_bytes(args.max_pending_bytes)))
    elif name == "d":
        os_exit_after(acker_bytes_held())
    raise SystemExit(f"unknown scenario {name!r}")


def run_child(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """One scenario in a fresh process running the engine of this tree."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, __file__, "--child", name, "--duration", str(args.duration),
           "--rss-cap-gb", str(args.rss_cap_gb), "--bolt", args.bolt,
           "--stages", str(args.stages), "--max-pending-bytes", args.max_pending_bytes]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env,
                         timeout=args.duration + 300)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise RuntimeError(f"scenario {name} printed no result (exit {out.returncode}):\n"
                           f"{out.stderr[-2000:]}")
    return dict(json.loads(lines[-1]))


def _verdict(ok: bool) -> str:
    return "ok" if ok else "MISS"


def rows(r: dict[str, Any], duration: float) -> list[tuple[str, str, str, str]]:
    """(scenario, figure, target, verdict) for each figure measured."""
    out = []
    for key, label in (("a-default", "max.spout.pending unset"),
                       ("a-pending", "max.spout.pending 50,000")):
        if key in r:
            x = r[key]
            capacity = x["executed"] / x["busy_secs"] if x["busy_secs"] else 1 / EXECUTE_SECS
            goodput = x["acked"] / duration
            wasted = x["wasted"] / x["executed"] if x["executed"] else 0.0
            out.append((f"a. 1 ms bolt, {label}: goodput", f"{goodput:,.0f} acked/s "
                        f"({goodput / capacity:.0%} of {capacity:,.0f}/s)",
                        ">= 90 % of capacity", _verdict(goodput >= 0.9 * capacity)))
            out.append((f"a. 1 ms bolt, {label}: wasted", f"{wasted:.1%} of "
                        f"{x['executed']:,} executions", "<= 5 %", _verdict(wasted <= 0.05)))
    if "b" in r:
        x = r["b"]
        share = x["after_per_sec"] / x["before_per_sec"] if x["before_per_sec"] else 0.0
        out.append(("b. hung executor: neighbour's rate", f"{x['before_per_sec']:,.0f}/s → "
                    f"{x['after_per_sec']:,.0f}/s ({share:.0%})", ">= 50 % of before",
                    _verdict(share >= 0.5)))
    if "c" in r:
        x = r["c"]
        gb = x["peak_rss_bytes"] / 1e9
        shown = f"{'>= ' if x['capped'] else ''}{gb:.2f} GB"
        if "peak_pending" in x:
            shown += (f" (trees in flight: peak {x['peak_pending']}, limit peak "
                      f"{x['peak_limit']}")
            shown += f"; {x['peak_bytes'] / 2**20:,.0f} MiB held)" if x["peak_bytes"] else ")"
        if "acked_per_sec" in x:
            shown += f", {x['acked_per_sec']:.1f} acked/s"
        stages = x.get("stages", 1)
        what = f"{stages} stages of 10 MB tuples" if stages > 1 else "10 MB tuples"
        out.append((f"c. {what}, slow bolt: peak RSS", shown, "< 1.5 GB",
                    _verdict(gb < 1.5 and not x["capped"])))
    if "d" in r:
        mb = r["d"]["held_bytes"] / 1e6
        out.append(("d. acker at 60,000 trees/s, 30 s timeout, 0 pending", f"{mb:.1f} MB held",
                    "< 20 MB", _verdict(mb < 20)))
    return out


def table(lines: list[tuple[str, str, str, str]]) -> str:
    """The rows as aligned text."""
    head = ("scenario", "measured", "target", "")
    widths = [max(len(row[i]) for row in [head, *lines]) for i in range(3)]
    fmt = f"{{:<{widths[0]}}}  {{:<{widths[1]}}}  {{:<{widths[2]}}}  {{}}"
    return "\n".join(fmt.format(*row) for row in [head, *lines])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=60.0,
                        help="seconds each engine scenario runs (default 60)")
    parser.add_argument("--only", default="a,b,c,d", help="scenarios to run, e.g. a,d")
    parser.add_argument("--rss-cap-gb", type=float, default=3.0,
                        help="stop scenario c when its RSS reaches this (default 3)")
    parser.add_argument("--bolt", choices=("sleep", "busy"), default="sleep",
                        help="scenario a's 1 ms: await asyncio.sleep (default) or a busy-wait")
    parser.add_argument("--stages", type=int, default=1,
                        help="scenario c: stages of 10 MB values, the slow bolt last (default 1)")
    parser.add_argument("--max-pending-bytes", default="default",
                        help="scenario c: topology.spout.max.pending.bytes, or none "
                             "(default: the engine's)")
    parser.add_argument("--json", type=Path, default=None, help="also write the raw figures")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args)
        return
    wanted = {s.strip() for s in args.only.split(",")}
    names = [n for n in ("a-default", "a-pending", "b", "c", "d") if n[0] in wanted]
    results: dict[str, Any] = {}
    for name in names:
        results[name] = run_child(name, args)
        print(f"  {name}: {results[name]}", file=sys.stderr, flush=True)
    hot = {r.get("hot_path") for r in results.values()}
    print(f"engine hot path: {', '.join(sorted(h for h in hot if h))}; engine scenarios ran "
          f"{args.duration:g} s each; scenario a's bolt: "
          f"{'busy-wait' if args.bolt == 'busy' else 'await asyncio.sleep(0.001)'}")
    print(table(rows(results, args.duration)))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"duration": args.duration, **results}, indent=2))


if __name__ == "__main__":
    main()
