"""``python -m engine run FILE --workers N``: N engine processes of one topology.

One engine process is one event loop on one core; the supervisor starts N of them (each a
plain ``python -m engine run FILE`` with the same options) and:

- refuses a topology whose spouts cannot share their input across processes (a spout
  class declares it can with ``shared_across_processes = True``; ``KafkaSpout`` does: its
  processes split the partitions through the consumer group); a spout that each process
  runs for itself (``per_process = True``: the checkpoint spout) is accepted;
- restarts a worker that dies (a crash, SIGKILL, an OOM kill) after a backoff that doubles
  from ``RESTART_BACKOFF`` up to ``RESTART_BACKOFF_MAX`` and resets once a worker stayed up
  ``STABLE_SECS``; every exit and restart is logged. A worker that ends by itself (status
  0: its topology finished, or ``--duration`` passed; 3: it finished with tuples not fully
  processed, which the supervisor's own status then says) is not restarted; one that reports
  invalid input (status 2) stops them all: a restart would fail the same way; so does one
  that failed twice in a row the same way before its topology ran (the same problem line:
  a module not installed, a bug in the topology file), with one line naming the problem;
- gives each worker an identity, ``topology.worker.id`` (``ID-I`` for worker I, ID given
  in the configuration or else ``<host>-<topology name>``): its Kafka consumers are static
  members of their groups and keep their partitions through the worker's restart;
- on SIGTERM or Ctrl-C asks every worker to drain (SIGTERM), waits for them, and kills
  those still running ``--drain-secs`` + ``KILL_GRACE`` seconds later;
- reads each worker's status lines from its stderr pipe and prints one line with their
  sums (counts of workers that exited are kept, so totals never go backwards); every other
  line a worker prints is passed on, prefixed with ``[worker I]``;
- with ``--http [HOST:]PORT`` worker I serves on PORT + I (PORT 0: each picks a free one).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import signal
import socket
import sys
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from engine.config import TOPOLOGY_WORKER_ID, TOPOLOGY_WORKERS, validate_config
from engine.observe.status import hop_part, parse_figures
from engine.run_outcome import EXIT_NOT_PROCESSED
from engine.startup import READY, WORKER_INDEX_ENV, problem
from engine.topology import Topology

__all__ = ["RESTART_BACKOFF", "refusal", "supervise", "worker_argv", "worker_ids"]

log = logging.getLogger("engine.supervisor")

RESTART_BACKOFF = 0.5
RESTART_BACKOFF_MAX = 30.0
STABLE_SECS = 60.0
KILL_GRACE = 10.0
USAGE_STATUS = 2

_SUMMED = ("emitted", "acked", "failed", "timeouts", "pending", "errors")
_ILLEGAL = re.compile(r"[^A-Za-z0-9._-]")
_TAIL = 40  # lines of a worker's output kept to name why it failed before running


def refusal(topology: Topology, workers: int) -> str | None:
    """Why ``topology`` cannot run in ``workers`` processes, or None if it can."""
    for spout in topology.spouts():
        obj = spout.obj
        if getattr(obj, "per_process", False):
            continue  # each process runs its own (the checkpoint spout)
        if not getattr(obj, "shared_across_processes", False):
            return (f"--workers {workers}: spout {spout.id!r} ({type(obj).__name__}) cannot "
                    f"share its input across processes (each would read all of it); "
                    f"run it with one worker")
    return None


def worker_argv(argv: list[str], index: int, workers: int | None = None,
                worker_id: str | None = None) -> list[str]:
    """The command-line arguments of worker ``index``: ``argv`` without ``--workers``, an
    ``--http`` port moved up by ``index`` and, given ``workers``, ``topology.workers`` set to
    it, given ``worker_id``, ``topology.worker.id`` set to ``worker_id-index`` (last, so
    they win over a ``--conf`` of the same key)."""
    out = _without_workers(argv, index)
    if workers is not None:
        out += ["--conf", f"{TOPOLOGY_WORKERS}={workers}"]
    if worker_id is not None:
        out += ["--conf", f"{TOPOLOGY_WORKER_ID}={worker_id}-{index}"]
    return out


def worker_ids(configured: Any, name: str, workers: int) -> str:
    """The identity the workers' ids derive from: ``configured`` (``topology.worker.id``)
    or ``<host>-<name>``. Raises ``ConfigError`` (one line) if worker ``workers - 1``'s id
    would not be a valid ``topology.worker.id``."""
    base = str(configured) if configured is not None else _ILLEGAL.sub(
        "_", f"{socket.gethostname()}-{name}")[:90]
    where = f"--workers {workers}"
    if configured is not None:
        validate_config({TOPOLOGY_WORKER_ID: configured}, where)
    validate_config({TOPOLOGY_WORKER_ID: f"{base}-{workers - 1}"},
                    f"{where}: the id of worker {workers - 1}")
    return base


def _without_workers(argv: list[str], index: int) -> list[str]:
    out: list[str] = []
    skip = False
    for i, arg in enumerate(argv):
        if skip:
            skip = False
            continue
        if arg == "--workers":
            skip = True
            continue
        if arg.startswith("--workers="):
            continue
        if arg == "--http" and i + 1 < len(argv):
            out += [arg, _shift_port(argv[i + 1], index)]
            skip = True
            continue
        if arg.startswith("--http="):
            out.append("--http=" + _shift_port(arg.split("=", 1)[1], index))
            continue
        out.append(arg)
    return out


def _shift_port(address: str, index: int) -> str:
    host, sep, port = address.rpartition(":")
    if not port.isdigit() or int(port) == 0:
        return address  # not a port, or 0: each worker picks a free port itself
    return f"{host}{sep}{int(port) + index}"


@dataclass
class _Worker:
    index: int
    proc: asyncio.subprocess.Process | None = None
    started: float = 0.0
    failures: int = 0
    figures: dict[str, float] = field(default_factory=dict)
    ready: bool = False  # this run said its topology runs
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=_TAIL))
    failed_start: str | None = None  # the problem of the last run, if it failed at start


class Supervisor:
    """Runs and watches the workers of one topology (see the module docstring)."""

    def __init__(self, name: str, argv: list[str], workers: int, status_interval: float,
                 drain_secs: float, worker_id: str | None = None) -> None:
        self.name = name
        self._argv = argv
        self._worker_id = worker_id
        self._workers = [_Worker(i) for i in range(workers)]
        self._status_interval = status_interval
        self._drain_secs = drain_secs
        self._retired: dict[str, float] = dict.fromkeys(_SUMMED, 0.0)
        self._stop = asyncio.Event()
        self._usage_error = False
        self._ended = 0  # EXIT_NOT_PROCESSED once a worker ended with it
        self._failed = 0  # a worker's status once it failed twice the same way at start
        self.restarts = 0
        self._ready = f"{name}: {READY}"

    async def run(self) -> int:
        """Until every worker ended or a stop signal; returns the exit status."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self._stop.set)
        keepers = [asyncio.create_task(self._keep(w)) for w in self._workers]
        status = asyncio.create_task(self._report())
        try:
            done = asyncio.gather(*keepers)
            stopping = asyncio.create_task(self._stop.wait())
            either: list[asyncio.Future[Any]] = [done, stopping]
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
            self._stop.set()
            await self._drain()
            await done
        finally:
            status.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await status
        print(self.status_line(), file=sys.stderr, flush=True)
        return USAGE_STATUS if self._usage_error else self._failed or self._ended

    async def _keep(self, worker: _Worker) -> None:
        loop = asyncio.get_running_loop()
        backoff = RESTART_BACKOFF
        while not self._stop.is_set():
            code = await self._run_once(worker)
            if code == EXIT_NOT_PROCESSED:
                self._ended = code
            if self._stop.is_set() or code in (0, EXIT_NOT_PROCESSED):
                return
            if code == USAGE_STATUS:
                log.error("worker %d: invalid input (status 2); stopping every worker",
                          worker.index)
                self._usage_error = True
                self._stop.set()
                return
            if self._failed_again(worker, code):
                self._stop.set()
                return
            if loop.time() - worker.started >= STABLE_SECS:
                backoff = RESTART_BACKOFF
            worker.failures += 1
            log.warning("worker %d exited with %s; restarting in %.1fs (restart %d)",
                        worker.index, _describe(code), backoff, worker.failures)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), backoff)
            backoff = min(backoff * 2, RESTART_BACKOFF_MAX)
            if not self._stop.is_set():
                self.restarts += 1

    def _failed_again(self, worker: _Worker, code: int) -> bool:
        """Whether ``worker`` ended before its topology ran, with a status (not a signal)
        and the same problem line as its previous run did: a restart would fail the same
        way. Logs the one line that says so."""
        if worker.ready or code <= 0:
            worker.failed_start = None
            return False
        failed, worker.failed_start = worker.failed_start, problem(worker.tail)
        if failed is None or failed != worker.failed_start:
            return False
        log.error("worker %d failed twice the same way before its topology ran (%s): %s; "
                  "stopping every worker", worker.index, _describe(code), failed)
        self._failed = code
        return True

    async def _run_once(self, worker: _Worker) -> int:
        env = {**os.environ, WORKER_INDEX_ENV: str(worker.index)}
        argv = worker_argv(self._argv, worker.index, len(self._workers), self._worker_id)
        worker.ready = False
        worker.tail.clear()
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "engine", *argv,
            stdin=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE, env=env)
        worker.proc, worker.started = proc, asyncio.get_running_loop().time()
        log.info("worker %d started (pid %d)", worker.index, proc.pid)
        assert proc.stderr is not None
        async for raw in proc.stderr:
            self._line(worker, raw.decode(errors="replace").rstrip("\n"))
        code = await proc.wait()
        for key, value in worker.figures.items():
            if _kept(key):
                self._retired[key] = self._retired.get(key, 0.0) + value
        worker.figures = {}
        worker.proc = None
        return code

    def _line(self, worker: _Worker, line: str) -> None:
        if line.startswith(f"[{self.name} "):
            worker.figures = parse_figures(line)
            return
        if line == self._ready:
            worker.ready = True
        worker.tail.append(line)
        print(f"[worker {worker.index}] {line}", file=sys.stderr, flush=True)

    def totals(self) -> dict[str, float]:
        """Sums over the workers (exited ones included, except their pending trees)."""
        total = dict(self._retired)
        total["acked/s"] = 0.0
        for worker in self._workers:
            for key, value in worker.figures.items():
                if key in total or key.startswith("hop:"):
                    total[key] = total.get(key, 0.0) + value
        return total

    def status_line(self) -> str:
        """The supervisor's status line: the workers' figures summed."""
        t = self.totals()
        alive = sum(1 for w in self._workers if w.proc is not None)
        hops = hop_part(t)
        return (f"[{self.name} workers={alive}/{len(self._workers)} restarts={self.restarts}] "
                f"{'input: ' if hops else ''}emitted={t['emitted']:.0f} "
                f"acked={t['acked']:.0f} failed={t['failed']:.0f} "
                f"timeouts={t['timeouts']:.0f} pending={t['pending']:.0f} errors={t['errors']:.0f} "
                f"acked/s={t['acked/s']:,.0f}{hops}")

    async def _report(self) -> None:
        while True:
            await asyncio.sleep(self._status_interval)
            print(self.status_line(), file=sys.stderr, flush=True)

    async def _drain(self) -> None:
        procs = [w.proc for w in self._workers if w.proc is not None]
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
        waits = [asyncio.create_task(p.wait()) for p in procs]
        if not waits:
            return
        _, late = await asyncio.wait(waits, timeout=self._drain_secs + KILL_GRACE)
        for proc in procs:
            if proc.returncode is None:
                log.warning("worker pid %d did not drain in time; killing it", proc.pid)
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
        if late:
            await asyncio.wait(late)


def _kept(key: str) -> bool:
    """Whether an exited worker's figure still counts: its totals, not what was pending or
    its rates."""
    name = key.partition("/")[2] if key.startswith("hop:") else key
    return name in _SUMMED and name != "pending"


def _describe(code: int) -> str:
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"signal {signal.Signals(-code).name}"
    return f"status {code}"


def supervise(args: Any, topology: Topology, argv: list[str],
              worker_id: Any = None) -> int:
    """Run ``args.workers`` workers of the topology file in ``argv``; the exit status.
    ``worker_id`` is the configured ``topology.worker.id``, if any (see ``worker_ids``).

    Raises ``ValueError`` with a one-line reason for a topology that cannot be shared,
    ``ConfigError`` for a ``worker_id`` that cannot name the workers.
    """
    reason = refusal(topology, args.workers)
    if reason is not None:
        raise ValueError(reason)
    base = worker_ids(worker_id, args.name, args.workers)
    log.info("worker ids (%s): %s-0 to %s-%d; their Kafka spouts are static members of "
             "their consumer groups (with a session of 6 s or more)", TOPOLOGY_WORKER_ID,
             base, base, args.workers - 1)
    supervisor = Supervisor(args.name, argv, args.workers, args.status_interval,
                            args.drain_secs, base)
    return asyncio.run(supervisor.run())
