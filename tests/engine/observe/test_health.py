"""``/healthz`` answers while the loop does; ``/readyz`` once every topology is active."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from engine import Config, LocalCluster, Spout, TopologyBuilder
from tests.engine.observe.helpers import get, get_json, word_count


class SlowOpen(Spout):
    """A spout whose ``open`` waits until the test lets it finish."""

    def __init__(self, gate: asyncio.Event) -> None:
        self.gate = gate

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["v"])

    async def open(self, conf: Any, context: Any, collector: Any) -> None:
        await self.gate.wait()

    def next_tuple(self) -> None:
        pass


async def test_ready_only_once_spouts_opened_and_not_after_kill() -> None:
    gate = asyncio.Event()
    b = TopologyBuilder()
    b.set_spout("slow", SlowOpen(gate))
    async with LocalCluster() as cluster:
        server = await cluster.serve_http()
        try:
            assert await get(server.url + "healthz") == (200, "ok\n")
            assert await get(server.url + "readyz") == (503, "not ready: no topology is "
                                                             "running\n")
            submit = asyncio.create_task(cluster.submit_topology("t", Config(),
                                                                 b.create_topology()))
            await asyncio.sleep(0.05)
            assert await get(server.url + "readyz") == (
                503, "not ready: topology 't' is opening its spouts\n")
            assert (await get(server.url + "healthz"))[0] == 200
            gate.set()
            await submit
            assert await get(server.url + "readyz") == (200, "ready\n")
            await cluster.kill_topology("t")
            assert (await get(server.url + "readyz"))[0] == 503
        finally:
            await server.close()


async def test_http_app_mounts_in_the_users_own_service() -> None:
    conf, topology = word_count(sentences=10, repeat=1)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("wc", conf, topology)
        app = web.Application()
        app.add_subapp("/stormloop/", cluster.http_app())
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        try:
            base = f"http://127.0.0.1:{port}/stormloop/"
            status, listing = await get_json(base + "api/v1/topologies")
            page_status, page = await get(base)
            ready = await get(base + "readyz")
        finally:
            await runner.cleanup()
    assert status == 200 and listing["topologies"][0]["name"] == "wc"
    assert page_status == 200 and "<svg" in page
    assert ready == (200, "ready\n")


async def test_server_close_releases_the_port() -> None:
    async with LocalCluster() as cluster:
        server = await cluster.serve_http()
        port = server.port
        assert port > 0 and server.url == f"http://127.0.0.1:{port}/"
        await server.close()
        again = await cluster.serve_http(port=port)
        try:
            assert again.port == port
        finally:
            await again.close()
