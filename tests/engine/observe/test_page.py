"""``/``: the status page, served self-contained and refreshed in a real headless Chromium."""

from __future__ import annotations

import re

import pytest

from engine import LocalCluster
from engine.testing import wait_until
from tests.engine.observe.chromium import Chromium
from tests.engine.observe.helpers import get, word_count


async def test_page_is_self_contained_with_the_topology_drawn_inline() -> None:
    conf, topology = word_count(sentences=20, repeat=1)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("wc", conf, topology)
        server = await cluster.serve_http()
        try:
            status, html = await get(server.url + "?window=600")
            _, empty = await get(server.url + "?topology=nope")
        finally:
            await server.close()
    assert status == 200
    assert html.startswith("<!DOCTYPE html>") and "<svg" in html
    for cid in ("sentences", "split", "count"):
        assert f'data-component="{cid}"' in html
    assert '<option value="600" selected>' in html
    # Nothing fetched from elsewhere: no external scripts, styles, fonts or images.
    assert not re.search(r'(src|href)\s*=\s*"(https?:)?//', html)
    assert "@import" not in html and "url(http" not in html
    assert 'data-component="sentences"' in empty  # unknown name: the first topology


async def test_page_without_topologies_says_so() -> None:
    async with LocalCluster() as cluster:
        server = await cluster.serve_http()
        try:
            status, html = await get(server.url)
        finally:
            await server.close()
    assert status == 200 and "no topology running" in html and "<svg" not in html


CHROMIUM = Chromium.find()


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary on PATH (Debian: apt-get "
                                              "install chromium); .ci/run installs it")
async def test_page_refreshes_itself_in_headless_chromium() -> None:
    assert CHROMIUM is not None
    conf, topology = word_count(sentences=2000, repeat=1000)  # runs for as long as needed
    conf["topology.max.spout.pending"] = 50  # slow and steady: figures change each refresh
    async with LocalCluster() as cluster:
        await cluster.submit_topology("wc", conf, topology)
        await wait_until(lambda: cluster.stats("wc")["components"]["sentences"]["acked"] > 0)
        server = await cluster.serve_http()
        try:
            async with Chromium(CHROMIUM) as browser:
                page = await browser.open(server.url + "?window=600")
                await page.wait_for("Number(document.body.dataset.refreshes) >= 1")
                drawn = await page.evaluate(
                    "[...document.querySelectorAll('#graph svg g.node')]"
                    ".map(g => g.dataset.component)")
                edges = await page.evaluate(
                    "[...document.querySelectorAll('#graph svg g.edge text')]"
                    ".map(t => t.textContent)")
                acked = ("(() => { const t = document.querySelector('#spouts table');"
                         " const i = [...t.querySelectorAll('th')]"
                         ".findIndex(h => h.textContent === 'Acked');"
                         " return t.querySelector('tr[data-id=sentences]')"
                         ".children[i].textContent; })()")
                first = await page.evaluate(acked)
                await page.wait_for("Number(document.body.dataset.refreshes) >= 2")
                second = await page.evaluate(acked)
                headers = await page.evaluate(
                    "[...document.querySelectorAll('#bolts th')].map(t => t.textContent)")
                capacity = await page.evaluate(
                    "document.querySelector('#graph g.node.bolt text:nth-of-type(3)')"
                    ".textContent")
        finally:
            await server.close()
    assert sorted(drawn) == ["count", "sentences", "split"]
    assert edges == ["default · shuffle", "default · fields(word)"]
    assert int(second.replace(",", "")) > int(first.replace(",", "")) > 0
    assert "Capacity" in headers and "Execute latency (ms)" in headers
    assert capacity.startswith("capacity ")
