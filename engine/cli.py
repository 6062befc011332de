"""``python -m engine run FILE``: run a topology file until done, stopped or timed out.

The file defines ``build(conf) -> Topology`` or a module-level ``topology``; an optional
``CONF`` dict is merged under ``--conf``, and an optional ``report(conf)`` returns text
printed to stdout once the run is over (the example's result). A status line goes to
stderr every few seconds and once more after the drain. Ctrl-C or SIGTERM drains and
closes. An invalid file, topology or configuration prints one line and exits with status 2,
as does a run that a task refused to let go on (``TopologyContext.refuse``);
a run in which tuples were given up or lost exits with status 3 (``run_outcome``).
``--log-level`` sets the engine's logging (``INFO``) and, as ``NAME=LEVEL``, any logger's;
aiokafka's loggers stay at ``WARNING`` unless named.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import logging
import os
import signal
import sys
from collections.abc import Coroutine
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

from engine import worker_lock
from engine.cluster import LocalCluster
from engine.config import TOPOLOGY_WORKER_ID, Config
from engine.errors import ConfigError, TopologyError
from engine.gc_tuning import tune_gc
from engine.observe.status import status_line
from engine.observe.svg import render_svg
from engine.run_outcome import judged_spouts, user_spouts, verdict
from engine.startup import EXTRAS, READY, WORKER_INDEX_ENV, install_hint
from engine.topology import Topology

if TYPE_CHECKING:
    from engine.observe.server import HttpServer

__all__ = ["EXTRAS", "READY", "main"]

log = logging.getLogger("engine.cli")

T = TypeVar("T")
"""What a coroutine run by ``_loop_runner`` returns."""


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
        hint = _extra_hint(exc)
        raise UsageError(f"{path}: import failed: {type(exc).__name__}: {exc}{hint}") from exc
    return module


def _extra_hint(exc: BaseException) -> str:
    """``; install it with pip install 'stormloop[EXTRA]'`` for a missing optional
    dependency, else nothing."""
    name = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
    return install_hint(name)


def load_topology(path: str, overrides: dict[str, Any]) -> tuple[Topology, Config]:
    """The topology and merged configuration a topology file defines."""
    return _load_topology(path, overrides)[1:]


def _load_topology(path: str, overrides: dict[str, Any]
                   ) -> tuple[ModuleType, Topology, Config]:
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
    return module, topology, conf


def _status(name: str, stats: dict[str, Any], spout_ids: set[str],
            last: dict[str, float]) -> str:
    """One status line (``engine.observe.status``): totals since the start, the ack rates
    since the previous line."""
    return status_line(name, stats, spout_ids, last, asyncio.get_running_loop().time())


async def _run(args: argparse.Namespace, topology: Topology, conf: Config) -> int:
    """Run until done, stopped or timed out; returns the exit status (see ``run_outcome``)."""
    loop = asyncio.get_running_loop()
    stop = _stop_on_signals(loop)
    name = args.name
    async with LocalCluster() as cluster, contextlib.AsyncExitStack() as http:
        if args.http is not None:
            server = await _serve_http(cluster, *args.http, show_errors=args.http_show_errors)
            http.push_async_callback(server.close)
            print(f"http: serving {server.url} (metrics at {server.url}metrics)",
                  file=sys.stderr, flush=True)
        if not await _start(cluster, name, conf, topology, stop):
            return 0  # stopped while waiting to start: nothing ran
        # Said once the signal handlers are in place: a SIGTERM from now on drains.
        print(f"{name}: {READY}", file=sys.stderr, flush=True)
        tune_gc()
        spout_ids = {d.id for d in user_spouts(topology)}  # checkpoints are not input
        last = {"acked": 0.0, "t": loop.time()}
        started = loop.time()
        next_status = started + args.status_interval
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.1)
            now = loop.time()
            if now >= next_status:
                line = _status(name, cluster.stats(name), spout_ids, last)
                print(line, file=sys.stderr, flush=True)
                next_status = now + args.status_interval
            if cluster.finished(name) or (args.duration is not None
                                          and now - started >= args.duration):
                break
        final = await cluster.kill_topology(name, wait_secs=args.drain_secs)
        print(_status(name, final, spout_ids, last), file=sys.stderr, flush=True)
    if final.get("refused"):
        print(f"{name}: refused: {final['refused']}", file=sys.stderr, flush=True)
        return 2
    status, why = verdict(final, judged_spouts(topology))
    if why:
        print(f"{name}: {why}", file=sys.stderr, flush=True)
    return status


START_RETRY_SECS = 1.0
START_RETRY_MAX_SECS = 30.0


async def _start(cluster: LocalCluster, name: str, conf: Config, topology: Topology,
                 stop: asyncio.Event) -> bool:
    """Submit the topology; True once it runs, False if ``stop`` came first.

    While an open or prepare fails with an error its library calls retriable (a Kafka
    broker not reachable yet), the start is tried again after a wait doubling from
    ``START_RETRY_SECS`` to ``START_RETRY_MAX_SECS``: one WARNING at the first failure,
    one INFO once it runs. Any other failure is raised.
    """
    loop = asyncio.get_running_loop()
    since, wait, failed = loop.time(), START_RETRY_SECS, 0
    while True:
        try:
            await cluster.submit_topology(name, conf, topology)
        except TopologyError as exc:
            if not _retriable(exc):
                raise
            if not failed:
                log.warning("%s: cannot start yet (%s); retrying quietly until it starts",
                            name, exc)
            failed += 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), wait)
            if stop.is_set():
                return False
            wait = min(wait * 2, START_RETRY_MAX_SECS)
            continue
        if failed:
            log.info("%s: started after %.1f s (%d failed attempts)", name,
                     loop.time() - since, failed)
        return True


def _retriable(exc: BaseException) -> bool:
    """Whether ``exc`` was caused by an error its library marks ``retriable`` (aiokafka's
    connection errors and timeouts are)."""
    cause: BaseException | None = exc.__cause__
    while cause is not None:
        if getattr(cause, "retriable", False) is True:
            return True
        cause = cause.__cause__
    return False


def _stop_on_signals(loop: asyncio.AbstractEventLoop) -> asyncio.Event:
    """An event that SIGINT and SIGTERM set (where the loop can install handlers)."""
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    return stop


async def _serve_http(cluster: LocalCluster, host: str, port: int, *,
                      show_errors: bool = False) -> HttpServer:
    """``--http``'s server; a port that cannot be listened on is a ``UsageError``."""
    try:
        return await cluster.serve_http(host, port, show_errors=show_errors)
    except OSError as exc:
        why = os.strerror(exc.errno) if exc.errno else str(exc)  # uvloop's text is long
        raise UsageError(f"--http {host}:{port}: cannot listen there ({why}); is another "
                         f"process serving on it? choose another port (0 picks a free one)"
                         ) from None


def _report(module: ModuleType, conf: Config) -> None:
    """Print what the file's optional ``report(conf)`` returns (the run's result)."""
    report = getattr(module, "report", None)
    if callable(report):
        text = report(conf)
        if text:
            print(text, flush=True)


# Third-party loggers that talk at INFO in normal operation; WARNING unless named.
QUIET_LOGGERS = ("aiokafka",)


def _parse_levels(specs: list[str]) -> dict[str, int]:
    """``--log-level`` values: ``LEVEL`` (the root logger) or ``NAME=LEVEL``."""
    levels: dict[str, int] = {"": logging.INFO, **dict.fromkeys(QUIET_LOGGERS, logging.WARNING)}
    for spec in specs:
        name, sep, level = spec.rpartition("=")
        if sep and not name:
            raise UsageError(f"--log-level expects LEVEL or NAME=LEVEL, got {spec!r}")
        number = logging.getLevelName(level.strip().upper())
        if not isinstance(number, int):
            raise UsageError(f"--log-level {spec!r}: unknown level {level!r}; use DEBUG, "
                             f"INFO, WARNING, ERROR or CRITICAL")
        levels[name.strip()] = number
    return levels


def configure_logging(specs: list[str]) -> None:
    """Log to stderr at the levels ``--log-level`` gives (see ``_parse_levels``)."""
    levels = _parse_levels(specs)
    logging.basicConfig(level=levels.pop(""), format="%(levelname)s %(name)s: %(message)s",
                        stream=sys.stderr, force=True)
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


RUN_EXIT_STATUS = """exit status:
  0  every tracked tuple was fully processed (or is still pending after a stop's drain)
  3  tuples were given up (a spout's max_retries used up, a record sent to a failed topic)
     or failed on a spout that does not replay them
  2  invalid input: file, topology, configuration or command line
  1  the engine crashed (a traceback says where)"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m engine")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a topology file", epilog=RUN_EXIT_STATUS,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("file")
    run.add_argument("--name", default=None, help="topology name (default: the file's stem)")
    run.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                     help="configuration override; VALUE is parsed as JSON when it can be")
    run.add_argument("--duration", type=float, default=None, metavar="SECS",
                     help="stop after SECS seconds (default: run until done or stopped)")
    run.add_argument("--drain-secs", type=float, default=5.0, metavar="SECS",
                     help="on stop, give pending trees this long to complete (default 5)")
    run.add_argument("--status-interval", type=float, default=5.0, metavar="SECS")
    run.add_argument("--http", type=_http_address, default=None, metavar="[HOST:]PORT",
                     help="serve /metrics, the JSON API and the status page (default host "
                          "127.0.0.1; port 0 picks a free one)")
    run.add_argument("--http-show-errors", action="store_true",
                     help="serve the text and traceback of components' errors over --http "
                          "(default: their exception type only; the texts may hold secrets)")
    run.add_argument("--log-level", action="append", default=[], metavar="[NAME=]LEVEL",
                     help="logging level (default INFO); NAME=LEVEL sets one logger's, e.g. "
                          "aiokafka=INFO (aiokafka is at WARNING unless named)")
    run.add_argument("--workers", type=int, default=1, metavar="N",
                     help="run N engine processes of the topology under a supervisor that "
                          "restarts crashed ones (spouts must share work, e.g. Kafka)")
    graph = sub.add_parser("graph", help="draw a topology file as SVG on stdout")
    graph.add_argument("file")
    graph.add_argument("--name", default=None, help="title (default: the file's stem)")
    graph.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE")
    return parser


def _http_address(raw: str) -> tuple[str, int]:
    """``[HOST:]PORT`` (``[::1]:PORT`` for IPv6) as ``(host, port)``."""
    host, sep, port = raw.rpartition(":")
    host = host.strip("[]") if sep else "127.0.0.1"
    try:
        number = int(port)
    except ValueError:
        number = -1
    if not host or not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"expected [HOST:]PORT with PORT 0-65535, got {raw!r}")
    return host, number


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit status (2 for invalid input)."""
    args = _parser().parse_args(argv)
    args.name = args.name or Path(args.file).stem.replace("_", "-")
    try:
        configure_logging(getattr(args, "log_level", []))
        module, topology, conf = _load_topology(args.file, _parse_conf(args.conf))
        if args.command == "graph":
            sys.stdout.write(render_svg(topology, title=args.name) + "\n")
            return 0
        # An id the user gave is held on this host; a worker's is its supervisor's.
        given = None if os.environ.get(WORKER_INDEX_ENV) else conf.get(TOPOLOGY_WORKER_ID)
        with worker_lock.hold(args.name, given):
            if getattr(args, "workers", 1) != 1:
                return _supervise(args, topology,
                                  list(sys.argv[1:] if argv is None else argv), given)
            status = _loop_runner(_run(args, topology, conf))
        _report(module, conf)
    except (UsageError, TopologyError, ConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return status


def _supervise(args: argparse.Namespace, topology: Topology, argv: list[str],
               worker_id: Any) -> int:
    if args.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {args.workers}")
    from engine.supervisor import supervise

    try:
        return supervise(args, topology, argv, worker_id)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _loop_runner(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on uvloop where installed, asyncio's loop otherwise; its result."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(coro)
