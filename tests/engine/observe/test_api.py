"""The JSON API: Storm UI's field names, windows, components with their recent errors."""

from __future__ import annotations

import json

from engine import Config, LocalCluster, TopologyBuilder
from engine.testing import CaptureBolt, FeederSpout, wait_until
from tests.engine.observe.helpers import get, get_json, judged, word_count

SPOUT_FIELDS = {"spoutId", "executors", "tasks", "emitted", "transferred", "completeLatency",
                "acked", "failed", "lastError", "timedOut", "pending", "inFlightLimit"}
BOLT_FIELDS = {"boltId", "executors", "tasks", "emitted", "transferred", "executed",
               "capacity", "executeLatency", "processLatency", "acked", "failed", "lastError"}


async def test_topology_view_has_storm_ui_fields_for_every_window() -> None:
    conf, topology = word_count(sentences=200, repeat=2)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("wc", conf, topology)
        await wait_until(lambda: cluster.finished("wc"))
        server = await cluster.serve_http()
        try:
            status, listing = await get_json(server.url + "api/v1/topologies")
            views = {}
            for window in ("600", "10800", ":all-time"):
                status, views[window] = await get_json(
                    f"{server.url}api/v1/topology/wc?window={window}")
                assert status == 200
            status, default = await get_json(server.url + "api/v1/topology/wc")
        finally:
            await server.close()
    assert [t["name"] for t in listing["topologies"]] == ["wc"]
    assert listing["topologies"][0]["status"] == "ACTIVE"
    assert listing["topologies"][0]["executorsTotal"] == 5
    assert default["window"] == ":all-time"
    view = views["600"]
    assert view["window"] == "600" and view["windowHint"] == "10m 0s"
    assert [s["window"] for s in view["topologyStats"]] == ["600", "10800", ":all-time"]
    (spout,) = view["spouts"]
    assert set(spout) >= SPOUT_FIELDS
    assert spout["spoutId"] == "sentences" and spout["acked"] == 400
    assert 0 < spout["inFlightLimit"] <= 500 and spout["pending"] == 0  # flow control's
    assert spout["completeLatency"] > 0
    bolts = {b["boltId"]: b for b in view["bolts"]}
    assert set(bolts) == {"split", "count"}
    for bolt in bolts.values():
        assert set(bolt) >= BOLT_FIELDS
        assert bolt["executors"] == 2 and bolt["tasks"] == 2
        assert 0 < bolt["capacity"] <= 1
        assert 0 < bolt["executeLatency"] <= bolt["processLatency"]
    assert bolts["split"]["executed"] == 400 and bolts["split"]["emitted"] == 4000
    assert bolts["split"]["transferred"] == 4000 and bolts["count"]["executed"] == 4000
    # Every window of a young topology spans all of it, and says so.
    assert view["topologyStats"][0]["acked"] == view["topologyStats"][2]["acked"] == 400
    assert [s["sameAsAllTime"] for s in view["topologyStats"]] == [True, True, False]
    # Nothing failed: no failures to speak of, and the pending figures agree when idle.
    assert spout["failedRatio"] == 0 and bolts["split"]["failedRatio"] == 0
    assert view["spoutPending"] == spout["pending"] == 0
    assert set(view["rates"]) == {"windowSecs", "emittedPerSec", "ackedPerSec",
                                  "failedPerSec"}
    assert {"emittedPerSec", "ackedPerSec", "failedPerSec"} <= set(spout)
    assert {"executedPerSec", "ackedPerSec", "failedPerSec"} <= set(bolts["count"])


async def test_component_view_lists_recent_errors_with_traceback() -> None:
    spout = FeederSpout(["verdict", "n"])
    for i in range(3):
        spout.feed(["boom", i], msg_id=i)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("j", Config(), judged(spout))
        await wait_until(lambda: len(spout.events) == 3)
        server = await cluster.serve_http(show_errors=True)
        try:
            status, comp = await get_json(server.url + "api/v1/topology/j/component/judge")
            _, view = await get_json(server.url + "api/v1/topology/j")
        finally:
            await server.close()
    assert status == 200
    assert comp["componentType"] == "bolt" and comp["boltId"] == "judge"
    errors = comp["componentErrors"]
    assert [e["error"] for e in errors] == ["ValueError: boom 2", "ValueError: boom 1",
                                            "ValueError: boom 0"]
    assert all(e["task"] == 2 and e["time"] > 0 and e["errorLapsedSecs"] >= 0 for e in errors)
    assert "raise ValueError" in errors[0]["traceback"]
    assert comp["lastError"] == "ValueError: boom 2"
    assert view["bolts"][0]["lastError"] == "ValueError: boom 2"
    assert view["errors"][0]["component"] == "judge"


SECRET = "hunter2"
ROUTES = ("", "metrics", "api/v1/topologies", "api/v1/topology/j",
          "api/v1/topology/j/component/judge", "api/v1/topology/j/graph.svg")


async def test_error_texts_and_tracebacks_are_served_only_when_asked() -> None:
    spout = FeederSpout(["verdict", "n"])
    spout.feed(["boom", f"password={SECRET}"], msg_id=1)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("j", Config(), judged(spout))
        await wait_until(lambda: len(spout.events) == 1)
        server = await cluster.serve_http()
        try:
            bodies = [(await get(server.url + path))[1] for path in ROUTES]
            _, comp = await get_json(server.url + "api/v1/topology/j/component/judge")
            _, view = await get_json(server.url + "api/v1/topology/j")
        finally:
            await server.close()
        assert not [path for path, body in zip(ROUTES, bodies, strict=True)
                    if SECRET in body or "Traceback" in body]
        assert comp["lastError"] == view["bolts"][0]["lastError"] == "ValueError"
        assert [(e["error"], e["traceback"]) for e in comp["componentErrors"]] == [
            ("ValueError", None)]
        assert (view["errors"][0]["error"], view["errors"][0]["traceback"]) == (
            "ValueError", None)
        shown = await cluster.serve_http(show_errors=True)
        try:
            _, full = await get_json(shown.url + "api/v1/topology/j/component/judge")
        finally:
            await shown.close()
    assert full["lastError"] == f"ValueError: boom password={SECRET}"
    assert "raise ValueError" in full["componentErrors"][0]["traceback"]


async def test_bad_window_and_unknown_names_get_one_line_errors() -> None:
    conf, topology = word_count(sentences=10, repeat=1)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("wc", conf, topology)
        server = await cluster.serve_http()
        try:
            bad_window = await get_json(server.url + "api/v1/topology/wc?window=60")
            no_topology = await get_json(server.url + "api/v1/topology/nope")
            no_component = await get_json(server.url + "api/v1/topology/wc/component/nope")
        finally:
            await server.close()
    assert bad_window == (400, {"error": "window '60': expected one of 600, 10800, "
                                         ":all-time"})
    assert no_topology[0] == 404 and "'nope': not running" in no_topology[1]["error"]
    assert no_component[0] == 404 and "no component 'nope'" in no_component[1]["error"]


async def test_stats_is_plain_json_data() -> None:
    conf, topology = word_count(sentences=50, repeat=1)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("wc", conf, topology)
        await wait_until(lambda: cluster.finished("wc"))
        stats = cluster.stats("wc")
    assert json.loads(json.dumps(stats)) == stats
    for key in ("pending", "components"):
        assert key in stats
    for cid in ("sentences", "split", "count", "__acker"):
        for key in ("emitted", "executed", "acked", "failed", "errors"):
            assert type(stats["components"][cid][key]) is int


async def test_the_ten_minute_window_leaves_out_older_trees() -> None:
    spout = FeederSpout(["verdict", "n"])
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", Config(), judged(spout))
        server = await cluster.serve_http()
        rt = cluster._running["t"]
        now = [rt.started_at]
        rt.clock = lambda: now[0]  # the figures' clock only; the ackers keep their own
        try:
            for i in range(5):
                spout.feed(["ok", i], msg_id=i)
            await wait_until(lambda: len(spout.events) == 5)
            now[0] += 100  # 100 s in: a bucket boundary is due
            await get_json(server.url + "api/v1/topology/t?window=600")
            now[0] += 700  # 800 s in: the first five trees are older than 10 minutes
            for i in range(5, 8):
                spout.feed(["ok", i], msg_id=i)
            await wait_until(lambda: len(spout.events) == 8)
            _, ten = await get_json(server.url + "api/v1/topology/t?window=600")
            _, all_time = await get_json(server.url + "api/v1/topology/t?window=:all-time")
        finally:
            await server.close()
    assert ten["spouts"][0]["acked"] == 3
    assert all_time["spouts"][0]["acked"] == 8
    assert [s["acked"] for s in ten["topologyStats"]] == [3, 8, 8]


async def test_transferred_counts_every_task_an_emit_reaches() -> None:
    b = TopologyBuilder()
    spout = FeederSpout(["v"])
    b.set_spout("feed", spout)
    b.set_bolt("fan", CaptureBolt(), 3).all_grouping("feed")
    for i in range(4):
        spout.feed([i], msg_id=i)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("fan", Config(), b.create_topology())
        await wait_until(lambda: len(spout.events) == 4)
        feed = cluster.stats("fan")["components"]["feed"]
    assert (feed["emitted"], feed["transferred"]) == (4, 12)
