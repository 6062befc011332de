"""The HTTP endpoint: an aiohttp application on the topology's own event loop.

Routes: ``/metrics`` (Prometheus text), ``/api/v1/topologies``,
``/api/v1/topology/{name}?window=600|10800|:all-time``,
``/api/v1/topology/{name}/component/{id}``, ``/api/v1/topology/{name}/graph.svg``,
``/healthz``, ``/readyz`` and ``/`` (the status page). Handlers only read figures; none
awaits anything but the network, so a scrape cannot stall the topology for long.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from engine.errors import TopologyError
from engine.observe.metrics import registry_for
from engine.observe.observer import Observer
from engine.observe.page import render_page
from engine.observe.svg import render_svg
from engine.observe.windows import parse_window

if TYPE_CHECKING:
    from engine.cluster import LocalCluster

__all__ = ["HttpServer", "make_app", "serve"]

OBSERVER: web.AppKey[Observer] = web.AppKey("stormloop_observer", Observer)
REGISTRY: web.AppKey[CollectorRegistry] = web.AppKey("stormloop_registry", CollectorRegistry)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _json_error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def _guarded(handler: Handler) -> Handler:
    """Turn a bad window or an unknown topology/component into a one-line JSON error."""
    async def wrapped(request: web.Request) -> web.StreamResponse:
        try:
            return await handler(request)
        except TopologyError as exc:  # before ValueError, its base
            return _json_error(404, str(exc))
        except ValueError as exc:
            return _json_error(400, str(exc))
    return wrapped


def _window(request: web.Request) -> str:
    return parse_window(request.query.get("window"))


async def _metrics(request: web.Request) -> web.Response:
    body = generate_latest(request.app[REGISTRY])
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


async def _topologies(request: web.Request) -> web.Response:
    return web.json_response(request.app[OBSERVER].topologies())


async def _topology(request: web.Request) -> web.Response:
    observer = request.app[OBSERVER]
    return web.json_response(observer.topology(request.match_info["name"], _window(request)))


async def _component(request: web.Request) -> web.Response:
    observer = request.app[OBSERVER]
    return web.json_response(observer.component(request.match_info["name"],
                                                request.match_info["component"],
                                                _window(request)))


def _svg(observer: Observer, name: str, window: str) -> str:
    view = observer.topology(name, window)
    figures = {s["spoutId"]: s for s in view["spouts"]}
    figures.update({b["boltId"]: b for b in view["bolts"]})
    return render_svg(observer.runtime(name).topology, figures)


async def _graph(request: web.Request) -> web.Response:
    svg = _svg(request.app[OBSERVER], request.match_info["name"], _window(request))
    return web.Response(text=svg, content_type="image/svg+xml")


async def _page(request: web.Request) -> web.Response:
    observer = request.app[OBSERVER]
    names = sorted(observer.runtimes())
    name = request.query.get("topology")
    if name not in names:
        name = names[0] if names else None
    window = _window(request)
    svg = _svg(observer, name, window) if name else ""
    return web.Response(text=render_page(names, name, window, svg), content_type="text/html")


async def _healthz(request: web.Request) -> web.Response:
    return web.Response(text="ok\n")


async def _readyz(request: web.Request) -> web.Response:
    why = request.app[OBSERVER].readiness()
    if why is None:
        return web.Response(text="ready\n")
    return web.Response(text=f"not ready: {why}\n", status=503)


async def _sampler(app: web.Application) -> AsyncIterator[None]:
    task = asyncio.get_running_loop().create_task(app[OBSERVER].run())
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def make_app(cluster: LocalCluster) -> web.Application:
    """An ``aiohttp.web.Application`` serving ``cluster``; mount it or run it."""
    app = web.Application()
    observer = Observer(cluster)
    app[OBSERVER] = observer
    app[REGISTRY] = registry_for(observer)
    app.cleanup_ctx.append(_sampler)
    app.router.add_get("/metrics", _metrics)
    app.router.add_get("/api/v1/topologies", _topologies)
    app.router.add_get("/api/v1/topology/{name}", _guarded(_topology))
    app.router.add_get("/api/v1/topology/{name}/component/{component}", _guarded(_component))
    app.router.add_get("/api/v1/topology/{name}/graph.svg", _guarded(_graph))
    app.router.add_get("/healthz", _healthz)
    app.router.add_get("/readyz", _readyz)
    app.router.add_get("/", _guarded(_page))
    return app


class HttpServer:
    """A running endpoint: ``host``, ``port`` (the bound one) and ``await close()``."""

    def __init__(self, runner: web.AppRunner, host: str, port: int) -> None:
        self._runner = runner
        self.host = host
        self.port = port

    @property
    def url(self) -> str:
        """``http://host:port/``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    async def close(self) -> None:
        """Stop listening and release the socket; idempotent."""
        await self._runner.cleanup()


async def serve(cluster: LocalCluster, host: str = "127.0.0.1", port: int = 0) -> HttpServer:
    """Serve ``make_app(cluster)`` on ``host:port`` (0: a free port) in this event loop."""
    runner = web.AppRunner(make_app(cluster), access_log=None, handle_signals=False)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
    except BaseException:
        await runner.cleanup()
        raise
    bound = runner.addresses[0]
    return HttpServer(runner, host, int(bound[1]))
