"""``/``: the status page, served self-contained and refreshed in a real headless Chromium."""

from __future__ import annotations

import re

import pytest

from engine import LocalCluster
from engine.observe.svg import capacity_colour, health_colour
from engine.testing import wait_until
from tests.engine.observe.chromium import Chromium, save_screenshot
from tests.engine.observe.helpers import (
    ALARMED,
    LONG_NAME,
    get,
    pipeline,
    scaled_out,
    word_count,
)


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


_NODE_TEXT_FITS = """[...document.querySelectorAll('#graph g.node')].map(g => {
  const box = g.querySelector('rect').getBBox();
  return [g.dataset.component, [...g.querySelectorAll('text')].map(
    t => t.getBBox().x + t.getBBox().width <= box.x + box.width - 4)];
})"""
_OUTSIDE_VIEW = """(() => {
  const width = document.documentElement.clientWidth;
  const graph = document.querySelector('#graph').getBoundingClientRect();
  return [...document.querySelectorAll('#graph g.node rect')]
    .filter(r => r.getBoundingClientRect().right > Math.min(width, graph.right) + 0.5)
    .map(r => r.parentNode.dataset.component);
})()"""
_COLUMN = """((section, header) => {
  const t = document.querySelector(section + ' table');
  const i = [...t.querySelectorAll('th')].findIndex(h => h.textContent === header);
  return [...t.querySelectorAll('tbody tr')].map(r => r.children[i].textContent);
})"""


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary on PATH (Debian: apt-get "
                                              "install chromium); .ci/run installs it")
async def test_an_eight_component_topology_fits_1280_px_with_rates_and_alarms() -> None:
    assert CHROMIUM is not None
    conf, topology = pipeline()
    async with LocalCluster() as cluster:
        await cluster.submit_topology("pipeline", conf, topology)
        await wait_until(lambda: cluster.stats("pipeline")["components"][ALARMED]["failed"] > 0)
        server = await cluster.serve_http()
        try:
            async with Chromium(CHROMIUM, 1280, 900) as browser:
                page = await browser.open(server.url + "?window=600")
                await page.wait_for("Number(document.body.dataset.refreshes) >= 1")
                await page.wait_for("document.querySelector('#rates').textContent"
                                    ".startsWith('now')")
                fits = await page.evaluate(_NODE_TEXT_FITS)
                outside = await page.evaluate(_OUTSIDE_VIEW)
                page_scrolls = await page.evaluate(
                    "document.documentElement.scrollWidth > "
                    "document.documentElement.clientWidth")
                alarmed = await page.evaluate(
                    "[...document.querySelectorAll('#graph g.node.alarm')]"
                    ".map(g => [g.dataset.component, g.querySelector('rect')"
                    ".getAttribute('fill')])")
                names = await page.evaluate(
                    "[...document.querySelectorAll('#graph g.node text.name')]"
                    ".map(t => t.textContent)")
                rates = await page.evaluate(f"({_COLUMN})('#spouts', 'Acked/s')")
                same = await page.evaluate(
                    "[...document.querySelectorAll('#topology-stats td.same')]"
                    ".map(t => t.textContent)")
                header = await page.evaluate("document.querySelector('#uptime').textContent")
                pending = await page.evaluate(f"({_COLUMN})('#spouts', 'Pending')")
                shot = await page.screenshot()
        finally:
            await server.close()
        await cluster.kill_topology("pipeline", wait_secs=1)
    save_screenshot("pipeline-1280.png", shot)
    assert len(fits) == 8 and all(all(row) for _, row in fits), fits
    assert outside == [] and not page_scrolls
    assert LONG_NAME not in names and any(n.endswith("…") for n in names)
    assert [ALARMED, health_colour(0.0, 5 / 6)] in alarmed
    assert health_colour(0.0, 5 / 6) == capacity_colour(1.0)  # red, as a bolt at capacity
    assert all(r.endswith("/s") and r != "-" for r in rates), rates
    assert same and all(s.startswith("= all time (uptime ") for s in same), same
    assert header.endswith(f"pending {sum(int(p.replace(',', '')) for p in pending):,}")


_OVERFLOWING = """[...document.querySelectorAll('section')]
  .filter(s => s.scrollWidth > s.clientWidth + 0.5)
  .map(s => s.querySelector('h2').textContent)"""


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary on PATH (Debian: apt-get "
                                              "install chromium); .ci/run installs it")
async def test_a_scaled_out_topology_fits_1280_px_with_its_hop_drawn() -> None:
    assert CHROMIUM is not None
    conf, topology = scaled_out()
    async with LocalCluster() as cluster:
        await cluster.submit_topology("scaled", conf, topology)
        await wait_until(lambda: cluster.stats("scaled")["components"]["counts"]["acked"] > 0)
        server = await cluster.serve_http()
        try:
            async with Chromium(CHROMIUM, 1280, 900) as browser:
                page = await browser.open(server.url + "?window=600")
                await page.wait_for("Number(document.body.dataset.refreshes) >= 1")
                overflowing = await page.evaluate(_OVERFLOWING)
                outside = await page.evaluate(_OUTSIDE_VIEW)
                header = await page.evaluate("document.querySelector('#uptime').textContent")
                topics = await page.evaluate(
                    "[...document.querySelectorAll('#graph g.node.topic')]"
                    ".map(g => g.dataset.hop)")
                shot = await page.screenshot()
        finally:
            await server.close()
        await cluster.kill_topology("scaled", wait_secs=1)
    save_screenshot("scaled-out-1280.png", shot)
    assert overflowing == [] and outside == [], (overflowing, outside)
    # A rate is "-" until the page has two samples of it (a busy machine's first second).
    rate = r"(?:[\d,.]+/s|-)"
    assert re.search(rf" · input: {rate} acked · pending [\d,]+ \| behind hop 'count': "
                     rf"{rate} acked · pending [\d,]+$", header), header
    assert topics == ["count"]
