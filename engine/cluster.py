"""``LocalCluster``: runs topologies inside the caller's event loop.

Lifecycle: CREATED → RUNNING (inside ``async with``) → STOPPED. Every executor is a task
of the cluster's ``asyncio.TaskGroup``; an engine fault in one cancels the others and
surfaces from the ``async with`` as an ``ExceptionGroup``. User code failing is not an
engine fault: it fails tuples and counts errors.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any

from engine.errors import TopologyError
from engine.observe.figures import topology_stats
from engine.runtime import RunningTopology
from engine.topology import Topology

if TYPE_CHECKING:
    from aiohttp import web

    from engine.observe.server import HttpServer

__all__ = ["LocalCluster"]

log = logging.getLogger(__name__)

# How often ``wait`` looks at a topology (a loop sleep, so virtual time applies).
_WAIT_POLL_SECS = 0.01


class _State(enum.Enum):
    CREATED = "created"
    RUNNING = "running"
    STOPPED = "stopped"


def _held_note(held: int) -> str:
    """Why trees were abandoned when windows held their tuples at the stop."""
    if not held:
        return ""
    return (f"; {held} tuples were in windows not closed yet: a stop is not the end of the "
            f"input, so their windows stay open; a replaying source (Kafka) emits them again "
            f"on the next run")


class LocalCluster:
    """Runs topologies in this event loop; leaving ``async with`` kills those still running."""

    def __init__(self) -> None:
        self._state = _State.CREATED
        self._group: asyncio.TaskGroup | None = None
        self._running: dict[str, RunningTopology] = {}

    async def __aenter__(self) -> LocalCluster:
        if self._state is not _State.CREATED:
            raise RuntimeError(f"LocalCluster is {self._state.value}; create a new one")
        self._group = asyncio.TaskGroup()
        await self._group.__aenter__()
        self._state = _State.RUNNING
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> bool | None:
        try:
            for name in list(self._running):
                await self.kill_topology(name, wait_secs=0)
        finally:
            self._state = _State.STOPPED
            assert self._group is not None
            if exc_type is None or issubclass(exc_type, asyncio.CancelledError):
                await self._group.__aexit__(exc_type, exc, tb)
            else:
                # Every executor is stopped already: let the caller's own exception
                # propagate as itself, not wrapped in an ExceptionGroup.
                await self._group.__aexit__(None, None, None)
        return None

    def _require_running(self) -> asyncio.TaskGroup:
        if self._state is _State.CREATED:
            raise RuntimeError("LocalCluster is not started; use `async with LocalCluster()`")
        if self._state is _State.STOPPED or self._group is None:
            raise RuntimeError("LocalCluster is stopped; create a new one")
        return self._group

    async def submit_topology(self, name: str, conf: Mapping[str, Any],
                              topology: Topology) -> None:
        """Start ``topology`` as ``name``; returns once every ``open``/``prepare`` ran.

        Raises ``TopologyError`` for a name already running or a failing open/prepare,
        ``ConfigError`` for an invalid configuration value.
        """
        group = self._require_running()
        if not isinstance(topology, Topology):
            raise TopologyError(f"topology {name!r}: expected a Topology from "
                                f"create_topology(), got {type(topology).__name__}")
        if name in self._running:
            raise TopologyError(f"topology {name!r}: a topology with this name is running")
        running = RunningTopology(name, dict(conf or {}), topology)
        self._running[name] = running
        try:
            await running.start(group.create_task)
        except BaseException:
            del self._running[name]
            await running.kill(0)
            raise

    async def kill_topology(self, name: str, wait_secs: float = 0) -> dict[str, Any]:
        """Stop calling ``next_tuple``, give pending trees ``wait_secs``, then close every task.

        Returns the topology's final ``stats``, taken after the drain, with ``"abandoned"``:
        the trees still pending when the tasks were closed (never acked nor failed); a
        warning names that number when it is not 0.
        """
        running = self._running.get(name)
        if running is None:
            raise TopologyError(f"topology {name!r}: not running; running: {sorted(self._running)}")
        try:
            await running.kill(wait_secs)
            final = topology_stats(running)
        finally:
            self._running.pop(name, None)
        final["abandoned"] = abandoned = final["spout_pending"]
        final["refused"] = running.stop_time.refused
        if abandoned:
            how = (f"drain timed out after {wait_secs:g} s" if wait_secs > 0
                   else "stopped without a drain")
            log.warning("topology %r: %s; %d tracked trees abandoned (their spouts heard "
                        "neither ack nor fail)%s", name, how, abandoned,
                        _held_note(running.held_in_windows()))
        return final

    async def wait(self, name: str) -> None:
        """Return once topology ``name`` is done: every spout task's ``exhausted()`` is True
        and no tracked tree is pending (see ``finished``); it keeps running until killed.

        Returns at once if ``name`` is killed meanwhile. Raises ``TopologyError`` when
        ``name`` is not running, or when a spout has no ``exhausted`` method (the topology
        could never be done).
        """
        running = self._running.get(name)
        if running is None:
            raise TopologyError(f"topology {name!r}: not running; running: {sorted(self._running)}")
        for executor in running.spout_executors:
            for task in executor.tasks:
                if not callable(getattr(task.obj, "exhausted", None)):
                    raise TopologyError(
                        f"topology {name!r}: spout {executor.component!r} has no exhausted() "
                        f"method, so the topology is never done; stop it with kill_topology")
        while (self._running.get(name) is running and running.stop_time.refused is None
               and not running.exhausted()):
            await asyncio.sleep(_WAIT_POLL_SECS)

    def stats(self, name: str) -> dict[str, Any]:
        """Figures of a running topology: ``pending``, ``components`` (per-component counters,
        acker figures under ``"__acker"``), ``complete_latency_ms`` and queue snapshots."""
        running = self._running.get(name)
        if running is None:
            raise TopologyError(f"topology {name!r}: not running; running: {sorted(self._running)}")
        return topology_stats(running)

    def finished(self, name: str) -> bool:
        """True when every spout task has an ``exhausted()`` that returns True and no tracked
        tree is pending: a finite topology is done; also True once a task refused the
        topology (``refusal``): it must not go on."""
        running = self._running.get(name)
        return running is not None and (running.stop_time.refused is not None
                                        or running.exhausted())

    def refusal(self, name: str) -> str | None:
        """Why a task of running topology ``name`` refused to let it go on
        (``TopologyContext.refuse``: its state cannot be trusted, or its group runs
        something else), or None. ``kill_topology``'s final stats carry it as
        ``"refused"``."""
        running = self._running.get(name)
        return None if running is None else running.stop_time.refused

    def topologies(self) -> list[str]:
        """Names of the running topologies."""
        return sorted(self._running)

    def runtimes(self) -> dict[str, RunningTopology]:
        """The running topologies by name (a copy): what the HTTP views read."""
        return dict(self._running)

    async def serve_http(self, host: str = "127.0.0.1", port: int = 0, *,
                         show_errors: bool = False,
                         max_connections: int | None = None) -> HttpServer:
        """Serve metrics, the JSON API, health checks and the status page on ``host:port``
        in this event loop (port 0 picks a free one: ``server.port``); ``await
        server.close()`` stops it. Errors are served by exception type only unless
        ``show_errors``; ``max_connections`` caps open connections (default 1000)."""
        from engine.observe.server import MAX_CONNECTIONS, serve

        return await serve(self, host, port, show_errors=show_errors,
                           max_connections=MAX_CONNECTIONS if max_connections is None
                           else max_connections)

    def http_app(self, *, show_errors: bool = False) -> web.Application:
        """The same endpoint as an ``aiohttp.web.Application``, to mount in your own (needs
        aiohttp, which a service mounting it has; ``serve_http`` does not); error texts
        only with ``show_errors``."""
        try:
            from engine.observe.aiohttp_app import make_app
        except ModuleNotFoundError as exc:
            if exc.name != "aiohttp":
                raise
            raise ModuleNotFoundError("http_app() returns an aiohttp application and needs "
                                      "aiohttp: pip install 'stormloop[aiohttp]' (serve_http "
                                      "needs nothing more)", name="aiohttp") from None
        return make_app(self, show_errors)
