"""The endpoint as an ``aiohttp.web.Application``, to mount in a service's own aiohttp
application (``LocalCluster.http_app``). The only module that imports aiohttp, which is
then the service's own dependency: the standalone endpoint (``server``) needs none."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from aiohttp import web

from engine.observe.routes import Routes

if TYPE_CHECKING:
    from engine.observe.observer import Topologies

__all__ = ["make_app"]

ROUTES: web.AppKey[Routes] = web.AppKey("stormloop_routes", Routes)


async def _handle(request: web.Request) -> web.Response:
    routes = request.app[ROUTES]
    answer = routes.respond(request.match_info["tail"].split("/"), request.query)
    return web.Response(status=answer.status, body=answer.body,
                        headers={"Content-Type": answer.content_type})


async def _sampler(app: web.Application) -> AsyncIterator[None]:
    task = asyncio.get_running_loop().create_task(app[ROUTES].observer.run())
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def make_app(cluster: Topologies, show_errors: bool = False) -> web.Application:
    """An ``aiohttp.web.Application`` serving ``cluster`` (every path of ``routes``; error
    texts only with ``show_errors``)."""
    app = web.Application()
    app[ROUTES] = Routes(cluster, show_errors)
    app.cleanup_ctx.append(_sampler)
    app.router.add_get("/{tail:.*}", _handle)
    return app
