"""The status line and the status page's header, stage by stage: the input, then the stage
behind a repartition hop, whose trees complete after the input's."""

from __future__ import annotations

from typing import Any

from engine import Config, LocalCluster, Topology, TopologyBuilder
from engine.cli import _status
from engine.keyed.hops import reader_id, writer_id
from engine.observe.api import topology_json
from engine.observe.status import hop_part, parse_figures
from engine.observe.windows import ALL_TIME, WINDOWS, Delta
from engine.supervisor import Supervisor, _Worker
from engine.testing import FeederSpout, wait_until
from tests.engine.observe.helpers import Judge, with_engine_ids


def hopped(words: FeederSpout, readers: FeederSpout) -> Topology:
    """The shape ``with_hops`` gives a fields grouping behind a shared spout: ``words`` →
    the hop's writer (acks everything), the hop's reader → ``count`` (a ``Judge``)."""
    b = TopologyBuilder()
    b.set_spout("words", words)
    b.set_spout("reader", readers)
    b.set_bolt("count", Judge()).shuffle_grouping("reader")
    b.set_bolt("writer", Judge()).shuffle_grouping("words")
    return with_engine_ids(b.create_topology(), {"reader": reader_id("count"),
                                                 "writer": writer_id("count")})


async def _hop_half_done() -> dict[str, Any]:
    """The stats of a run whose input is all acked while the stage behind the hop holds
    two of its three trees."""
    words, readers = FeederSpout(["verdict", "n"]), FeederSpout(["verdict", "n"])
    for i in range(4):
        words.feed(["ok", i], msg_id=i)
    for i, verdict in enumerate(["ok", "hold", "hold"]):
        readers.feed([verdict, i], msg_id=i)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("wc", Config(), hopped(words, readers))
        await wait_until(lambda: len(words.events) == 4 and len(readers.events) == 1)
        return cluster.stats("wc")


async def test_the_status_line_shows_the_stage_behind_a_hop() -> None:
    stats = await _hop_half_done()
    line = _status("wc", stats, {"words"}, {"acked": 0.0, "t": 0.0})
    assert " input: emitted=4 acked=4 failed=0 timeouts=0 pending=0 errors=0 " in line
    assert line.endswith(" | behind hop 'count': emitted=3 acked=1 failed=0 timeouts=0 "
                         "pending=2 acked/s=0"), line


async def test_without_a_hop_the_line_is_as_before() -> None:
    words = FeederSpout(["verdict", "n"])
    words.feed(["hold", 1], msg_id=1)
    b = TopologyBuilder()
    b.set_spout("words", words)
    b.set_bolt("count", Judge()).shuffle_grouping("words")
    async with LocalCluster() as cluster:
        await cluster.submit_topology("wc", Config(), b.create_topology())
        await wait_until(lambda: cluster.stats("wc")["spout_pending"] == 1)
        line = _status("wc", cluster.stats("wc"), {"words"}, {"acked": 0.0, "t": 0.0})
    assert "] emitted=1 acked=0 failed=0 timeouts=0 pending=1 " in line
    assert " | " not in line and "input:" not in line


async def test_the_page_header_counts_the_stages_the_line_counts() -> None:
    stats = await _hop_half_done()
    deltas = {w: Delta({}, 0.0) for w in WINDOWS}
    view = topology_json(stats, ALL_TIME, deltas, {})
    assert [(s["stage"], s["spouts"], s["emitted"], s["acked"], s["pending"])
            for s in view["stages"]] == [("input", ["words"], 4, 4, 0),
                                         ("behind hop 'count'", [reader_id("count")], 3, 1, 2)]
    line = parse_figures(_status("wc", stats, {"words"}, {"acked": 0.0, "t": 0.0}))
    for stage, prefix in zip(view["stages"], ("", "hop:count/"), strict=True):
        assert [line[prefix + k] for k in ("emitted", "acked", "pending")] == [
            stage["emitted"], stage["acked"], stage["pending"]]


def test_the_supervisor_sums_each_stage_of_its_workers_lines() -> None:
    supervisor = Supervisor("wc", [], 2, 5.0, 5.0)
    lines = ["[wc 9s] input: emitted=10 acked=10 failed=0 timeouts=0 pending=0 errors=0 "
             "acked/s=0 latency p50=1ms p99=2ms | behind hop 'count': emitted=10 acked=4 "
             "failed=0 timeouts=0 pending=6 acked/s=1,200",
             "[wc 9s] input: emitted=5 acked=5 failed=0 timeouts=0 pending=0 errors=0 "
             "acked/s=0 latency p50=- p99=- | behind hop 'count': emitted=7 acked=7 "
             "failed=1 timeouts=0 pending=0 acked/s=300"]
    for worker, line in zip(supervisor._workers, lines, strict=True):
        assert isinstance(worker, _Worker)
        supervisor._line(worker, line)
    status = supervisor.status_line()
    assert "] input: emitted=15 acked=15 failed=0 timeouts=0 pending=0 errors=0 " in status
    assert status.endswith(" | behind hop 'count': emitted=17 acked=11 failed=1 timeouts=0 "
                           "pending=6 acked/s=1,500"), status


def test_no_hop_figures_no_hop_part() -> None:
    assert hop_part({"emitted": 3.0, "acked/s": 1.0}) == ""
