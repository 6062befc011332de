"""Where the topology drawing puts each node: bands of layered columns.

A topology scaled out over processes carries each fields grouping through a repartition
topic (``engine/keyed/hops.py``): a writer bolt ``__<bolt>-repartition-writer`` sends the
tuples to the topic, a reader spout ``__<bolt>-repartition`` reads them back. The drawing
shows that topic as a node of its own between the two (``Hop``). Each hop opens a band
below the band of its writer: the topic in the band's first column, its reader next, and
what the reader feeds after it, so the stage behind a hop reads as a row of its own that
starts where the stage before it ends. A topology without hops is one band.

Within a band, nodes are placed in columns by their longest path from a source (cycles are
cut), ordered within a column by the mean position of their sources, each column centred
in its band's height.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from engine.keyed.hops import reader_id, writer_id
from engine.topology import Topology

__all__ = ["GAP_X", "GAP_Y", "HOP_GAP", "MARGIN", "NODE_H", "NODE_W", "Hop", "Layout",
           "hops", "layout"]

NODE_W, NODE_H = 200, 80
GAP_X, GAP_Y = 96, 30
HOP_GAP = 44
"""Vertical room between two bands, for the edge from a hop's writer down to its topic."""
MARGIN = 24


@dataclass(frozen=True, slots=True)
class Hop:
    """A repartition hop in a rewritten topology, and the node that stands for its topic."""

    bolt: str
    reader: str
    writer: str
    topic: str
    """The topic's name, where the reader spout says it (``topics``), else ``"?"``."""
    key: tuple[str, ...]
    """The fields the bolt groups by: the records' key."""

    @property
    def node(self) -> str:
        """The topic node's id in the drawing (no component id starts with ``@``)."""
        return f"@{self.reader}"


def hops(topology: Topology) -> list[Hop]:
    """The topology's repartition hops (none before ``with_hops`` rewrote it)."""
    comps = topology.components
    out = []
    for cid, d in comps.items():
        reader, writer = reader_id(cid), writer_id(cid)
        if reader in comps and writer in comps:
            topics = getattr(comps[reader].obj, "topics", None) or ["?"]
            key = next((s.fields for s in d.inputs if s.source == reader), ())
            out.append(Hop(cid, reader, writer, str(topics[0]), tuple(key)))
    return out


@dataclass(frozen=True, slots=True)
class Layout:
    """Node positions (top-left corners) and the drawing's size."""

    positions: dict[str, tuple[int, int]]
    width: int
    height: int
    node_width: int = NODE_W


def _sources(topology: Topology, found: list[Hop]) -> dict[str, list[str]]:
    """Each node's sources for placing it: a reader's is its topic node, a topic node has
    none (its writer is in the band above)."""
    sources = {cid: [s.source for s in d.inputs if s.source in topology.components]
               for cid, d in topology.components.items()}
    for hop in found:
        sources[hop.node] = []
        sources[hop.reader] = [hop.node]
    return sources


def _relaxed(order: list[str], step: Mapping[str, list[str]], seed: dict[str, int],
             plus: Mapping[str, int]) -> dict[str, int]:
    """``seed`` raised until each node is at least each of ``step``'s sources plus its
    ``plus`` (0 or 1); at most ``len(order)`` rounds, so a cycle cannot loop forever."""
    value = dict(seed)
    for _ in range(len(order)):
        changed = False
        for node in order:
            for src in step[node]:
                if src != node and value[src] + plus.get(src, 0) > value[node]:
                    value[node] = min(value[src] + plus.get(src, 0), len(order))
                    changed = True
        if not changed:
            break
    return value


def _bands(order: list[str], sources: Mapping[str, list[str]],
           found: list[Hop]) -> dict[str, int]:
    """Band 0 for what no hop precedes; a hop's topic one band below its writer's; any
    other node the lowest band of its sources."""
    step = {**sources, **{hop.node: [hop.writer] for hop in found}}
    # A writer bolt feeds nothing but its topic, so only that edge goes a band down.
    return _relaxed(order, step, dict.fromkeys(order, 0), {hop.writer: 1 for hop in found})


def _columns(order: list[str], sources: Mapping[str, list[str]],
             bands: Mapping[str, int]) -> dict[tuple[int, int], list[str]]:
    """``{(band, column): nodes}``, each column ordered by its nodes' sources' ranks."""
    same = {n: [s for s in sources[n] if bands[s] == bands[n]] for n in order}
    layer = _relaxed(order, same, dict.fromkeys(order, 0), dict.fromkeys(order, 1))
    columns: dict[tuple[int, int], list[str]] = {}
    for node in order:
        columns.setdefault((bands[node], layer[node]), []).append(node)
    rank: dict[str, float] = {}
    for key in sorted(columns):
        def mean(node: str) -> float:
            ranks = [rank[s] for s in sources[node] if s in rank]
            return sum(ranks) / len(ranks) if ranks else 0.0
        if key[1]:
            columns[key] = sorted(columns[key], key=mean)
        for i, node in enumerate(columns[key]):
            rank[node] = float(i)
    return columns


def layout(topology: Topology, node_width: int = NODE_W) -> Layout:
    """Positions of every component and hop topic node: bands top to bottom, in each one
    column per layer, sources to the left."""
    found = hops(topology)
    order = [h.node for h in found] + list(topology.components)
    sources = _sources(topology, found)
    columns = _columns(order, sources, _bands(order, sources, found))
    tallest: dict[int, int] = {}
    for (band, _), members in columns.items():
        tallest[band] = max(tallest.get(band, 0), len(members))
    tops, y = {}, MARGIN
    for band in sorted(tallest):
        tops[band] = y
        y += tallest[band] * NODE_H + (tallest[band] - 1) * GAP_Y + HOP_GAP
    positions = {}
    for (band, col), members in columns.items():
        span = len(members) * NODE_H + (len(members) - 1) * GAP_Y
        band_h = tallest[band] * NODE_H + (tallest[band] - 1) * GAP_Y
        top = tops[band] + (band_h - span) // 2
        for i, node in enumerate(members):
            positions[node] = (MARGIN + col * (node_width + GAP_X), top + i * (NODE_H + GAP_Y))
    width = MARGIN * 2 + (max((c for _, c in columns), default=0) + 1) * (node_width + GAP_X)
    return Layout(positions, width - GAP_X, y - HOP_GAP + MARGIN, node_width)
