"""The topology drawn as SVG, and ``python -m engine graph``."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from engine import Bolt, TopologyBuilder
from engine.keyed.hops import reader_id, writer_id
from engine.observe.svg import capacity_colour, layout, render_svg
from engine.observe.svg_layout import GAP_X, MARGIN
from engine.testing import FeederSpout
from tests.engine.observe.helpers import scaled_out, word_count

ROOT = Path(__file__).resolve().parents[3]
NS = {"s": "http://www.w3.org/2000/svg"}


class Pass(Bolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["v"])

    def execute(self, tup: Any) -> None:
        pass


def test_layers_follow_the_data_from_spouts() -> None:
    _, topology = word_count()
    pos = layout(topology).positions
    assert pos["sentences"][0] < pos["split"][0] < pos["count"][0]


def test_nodes_and_labelled_edges() -> None:
    _, topology = word_count()
    doc = ET.fromstring(render_svg(topology, title="wc"))
    nodes = {g.get("data-component"): g.get("class")
             for g in doc.iter("{http://www.w3.org/2000/svg}g") if g.get("data-component")}
    assert nodes == {"sentences": "node spout", "split": "node bolt", "count": "node bolt"}
    labels = ["".join(t.itertext()) for t in doc.findall(".//s:g[@class='edge']/s:text", NS)]
    assert labels == ["default · shuffle", "default · fields(word)"]


def test_bolts_are_coloured_by_capacity() -> None:
    _, topology = word_count()
    svg = render_svg(topology, {"split": {"capacity": 0.95, "executed": 10},
                                "count": {"capacity": 0.05, "executed": 10},
                                "sentences": {"pending": 3, "inFlightLimit": 500,
                                              "timedOut": 2}})
    assert capacity_colour(0.95) in svg and capacity_colour(0.05) in svg
    assert capacity_colour(0.95) != capacity_colour(0.05)
    assert capacity_colour(None) == "#e8eaed"
    assert "capacity 0.950" in svg and "pending 3/500 · timeouts 2" in svg


def test_cycles_and_diamonds_are_drawn() -> None:
    b = TopologyBuilder()
    b.set_spout("s", FeederSpout(["v"]))
    b.set_bolt("a", Pass()).shuffle_grouping("s").shuffle_grouping("c")
    b.set_bolt("b", Pass()).shuffle_grouping("s")
    b.set_bolt("c", Pass()).shuffle_grouping("a").all_grouping("b")
    topology = b.create_topology()
    pos = layout(topology).positions
    assert pos["s"][0] < pos["a"][0] and pos["s"][0] < pos["b"][0] < pos["c"][0]
    ET.fromstring(render_svg(topology))  # well-formed, back edge included


def test_graph_command_draws_a_topology_file() -> None:
    out = subprocess.run([sys.executable, "-m", "engine", "graph",
                          "topologies/kafka_word_count.py"], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, check=True).stdout
    doc = ET.fromstring(out)
    comps = {g.get("data-component") for g in doc.iter("{http://www.w3.org/2000/svg}g")}
    assert {"sentences", "split", "count", "counts"} <= comps
    assert "kafka-word-count" in out


def test_a_hops_topic_is_drawn_between_its_writer_and_its_reader() -> None:
    _, topology = scaled_out()
    reader, writer = reader_id("count"), writer_id("count")
    lay = layout(topology)
    pos, topic = lay.positions, "@" + reader
    assert pos[topic][1] > pos[writer][1]  # in the band below the writer's
    assert pos[topic][0] == pos["sentences"][0]  # which it opens
    assert pos[topic][0] < pos[reader][0] < pos["count"][0] < pos["counts"][0]
    assert pos[topic][1] == pos[reader][1] == pos["count"][1] == pos["counts"][1]
    assert lay.width == 2 * MARGIN + 4 * (lay.node_width + GAP_X) - GAP_X  # four columns
    doc = ET.fromstring(render_svg(topology))
    topics = [(g.get("data-hop"), "".join(g.itertext()))
              for g in doc.findall(".//s:g[@class='node topic']", NS)]
    assert topics == [("count", "Kafka topic ??repartition topic of countkey: n")], topics
    hop_edges = {(g.get("data-source"), g.get("data-target"))
                 for g in doc.findall(".//s:g[@class='edge hop']", NS)}
    assert hop_edges == {(writer, topic), (topic, reader)}
