"""``python -m engine run FILE``: run a topology file until done, stopped or timed out.

The file defines ``build(conf) -> Topology`` or a module-level ``topology``; an optional
``CONF`` dict is merged under ``--conf``. A status line goes to stderr every few seconds.
Ctrl-C or SIGTERM drains and closes. An invalid file, topology or configuration prints one
line and exits with status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import logging
import signal
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from engine.cluster import LocalCluster
from engine.config import Config
from engine.errors import ConfigError, TopologyError
from engine.gc_tuning import tune_gc
from engine.topology import Topology

__all__ = ["main"]


class UsageError(Exception):
    """A bad command line or topology file: printed as one line, exit status 2."""


def _parse_conf(pairs: list[str]) -> dict[str, Any]:
    conf: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--conf expects KEY=VALUE, got {pair!r}")
        try:
            conf[key] = json.loads(raw)
        except ValueError:
            conf[key] = None if raw in ("None", "none") else raw
    return conf


def _load(path: str) -> ModuleType:
    file = Path(path)
    if not file.is_file():
        raise UsageError(f"{path}: no such file")
    spec = importlib.util.spec_from_file_location(f"_topology_{file.stem}", file)
    if spec is None or spec.loader is None:
        raise UsageError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(file.resolve().parent))
    try:
        spec.loader.exec_module(module)
    except (TopologyError, ConfigError):
        raise
    except Exception as exc:
        raise UsageError(f"{path}: import failed: {type(exc).__name__}: {exc}") from exc
    return module


def load_topology(path: str, overrides: dict[str, Any]) -> tuple[Topology, Config]:
    """The topology and merged configuration a topology file defines."""
    module = _load(path)
    conf = Config(getattr(module, "CONF", {}) or {})
    conf.update(overrides)
    if hasattr(module, "build"):
        topology = module.build(conf)
    elif hasattr(module, "topology"):
        topology = module.topology
    else:
        raise UsageError(f"{path}: defines neither build(conf) nor a module-level `topology`")
    if not isinstance(topology, Topology):
        raise UsageError(f"{path}: expected a Topology (TopologyBuilder.create_topology()), "
                         f"got {type(topology).__name__}")
    return topology, conf


def _status(name: str, stats: dict[str, Any], spout_ids: set[str],
            last: dict[str, float]) -> str:
    spouts = [c for cid, c in stats["components"].items() if cid in spout_ids]
    emitted = sum(c["emitted"] for c in spouts)
    acked = sum(c["acked"] for c in spouts)
    failed = sum(c["failed"] for c in spouts)
    errors = sum(c["errors"] for cid, c in stats["components"].items())
    now = time.monotonic()
    rate = (acked - last["acked"]) / max(now - last["t"], 1e-9)
    last["acked"], last["t"] = acked, now
    lat = stats["complete_latency_ms"]
    return (f"[{name} {stats['uptime_secs']:.0f}s] emitted={emitted} acked={acked} "
            f"failed={failed} pending={stats['spout_pending']} errors={errors} "
            f"acked/s={rate:,.0f} latency p50={lat['p50']}ms p99={lat['p99']}ms")


async def _run(args: argparse.Namespace, topology: Topology, conf: Config) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    name = args.name
    async with LocalCluster() as cluster:
        await cluster.submit_topology(name, conf, topology)
        tune_gc()
        spout_ids = {d.id for d in topology.spouts()}
        last = {"acked": 0.0, "t": time.monotonic()}
        started = time.monotonic()
        next_status = started + args.status_interval
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.1)
            now = time.monotonic()
            if now >= next_status:
                line = _status(name, cluster.stats(name), spout_ids, last)
                print(line, file=sys.stderr, flush=True)
                next_status = now + args.status_interval
            if args.duration is not None and now - started >= args.duration:
                break
            if cluster.finished(name):
                break
        print(_status(name, cluster.stats(name), spout_ids, last), file=sys.stderr, flush=True)
        await cluster.kill_topology(name, wait_secs=args.drain_secs)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m engine")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a topology file")
    run.add_argument("file")
    run.add_argument("--name", default=None, help="topology name (default: the file's stem)")
    run.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                     help="configuration override; VALUE is parsed as JSON when it can be")
    run.add_argument("--duration", type=float, default=None, metavar="SECS",
                     help="stop after SECS seconds (default: run until done or stopped)")
    run.add_argument("--drain-secs", type=float, default=5.0, metavar="SECS",
                     help="on stop, give pending trees this long to complete (default 5)")
    run.add_argument("--status-interval", type=float, default=5.0, metavar="SECS")
    run.add_argument("--workers", type=int, default=1, metavar="N",
                     help="run N engine processes of the topology under a supervisor that "
                          "restarts crashed ones (spouts must share work, e.g. Kafka)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit status (2 for invalid input)."""
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s",
                        stream=sys.stderr)
    args.name = args.name or Path(args.file).stem.replace("_", "-")
    try:
        topology, conf = load_topology(args.file, _parse_conf(args.conf))
        if args.workers != 1:
            return _supervise(args, topology, list(sys.argv[1:] if argv is None else argv))
        _loop_runner(_run(args, topology, conf))
    except (UsageError, TopologyError, ConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


def _supervise(args: argparse.Namespace, topology: Topology, argv: list[str]) -> int:
    if args.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {args.workers}")
    from engine.supervisor import supervise

    try:
        return supervise(args, topology, argv)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _loop_runner(coro: Any) -> None:
    try:
        import uvloop
    except ImportError:
        asyncio.run(coro)
    else:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(coro)
