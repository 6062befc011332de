"""The topology drawn as SVG: layout computed here, no browser script needed.

Components are placed in layers by their longest path from a spout (``svg_layout``) and
joined by curved edges labelled ``stream · grouping``; the topic of a repartition hop is
a node of its own, fed by the hop's writer bolt from the band above and feeding its
reader spout. Boxes are as wide as their text needs, up to a bound past
which text ends in an ellipsis (``svg_text``). With figures, a bolt's colour follows the
worse of its capacity and its failures (green → amber → red; failing ``ALARM_FAILED_RATIO``
of its tuples is red, with a red border), spouts show pending trees and timeouts, and
every node its rates per second. The drawing scales down to the width it is shown in (to
no less than ``MIN_SCALE``; past that, its container scrolls).
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from itertools import pairwise
from typing import Any

from engine.observe.svg_layout import (
    GAP_X,
    GAP_Y,
    MARGIN,
    NODE_H,
    NODE_W,
    Hop,
    Layout,
    hops,
    layout,
)
from engine.observe.svg_text import fit, text_width
from engine.topology import Topology

__all__ = ["ALARM_FAILED_RATIO", "Layout", "capacity_colour", "health_colour", "layout",
           "render_svg"]

NODE_W_MAX = 220
PAD = 12
NAME_PX, LINE_PX, EDGE_PX = 13, 12, 11
MIN_SCALE = 0.6
ALARM_FAILED_RATIO = 0.2
"""A component failing this share of its tuples (or more) is drawn in the alarm colour."""


def capacity_colour(capacity: float | None) -> str:
    """Fill for a bolt: grey when unknown, green at 0 through amber to red at 1 and above."""
    if capacity is None:
        return "#e8eaed"
    c = max(0.0, min(capacity, 1.0))
    stops = ((0.0, (200, 235, 200)), (0.5, (255, 224, 130)), (1.0, (244, 133, 120)))
    for (a, ca), (b, cb) in pairwise(stops):
        if c <= b:
            t = (c - a) / (b - a)
            rgb = tuple(round(x + (y - x) * t) for x, y in zip(ca, cb, strict=True))
            return "#{:02x}{:02x}{:02x}".format(*rgb)
    return "#f48578"


def health_colour(capacity: float | None, failed_ratio: float | None) -> str:
    """Fill for a bolt: the worse of its capacity and its failures, on the capacity scale;
    failing ``ALARM_FAILED_RATIO`` of its tuples counts as capacity 1 (red). Grey when
    neither is known."""
    if capacity is None and failed_ratio is None:
        return capacity_colour(None)
    return capacity_colour(max(capacity or 0.0, (failed_ratio or 0.0) / ALARM_FAILED_RATIO))


def _spout_fill(f: Mapping[str, Any]) -> str:
    ratio = f.get("failedRatio") or 0.0
    if ratio >= ALARM_FAILED_RATIO:
        return "#f6aea9"
    return "#fce8b2" if f.get("timedOut") or ratio else "#d2e3fc"


def _grouping(sub: Any) -> str:
    if sub.kind == "fields" and sub.fields:
        return f"fields({', '.join(sub.fields)})"
    return str(sub.kind)


def _edges(topology: Topology, lay: Layout) -> list[str]:
    out = []
    pos, node_w = lay.positions, lay.node_width
    for d in topology.components.values():
        spread = (len(d.inputs) - 1) / 2
        for n, sub in enumerate(d.inputs):
            if sub.source not in pos:
                continue
            sx, sy = pos[sub.source]
            tx, ty = pos[d.id]
            x1, y1 = sx + node_w, sy + NODE_H // 2 + round((n - spread) * 8)
            x2, y2 = tx, ty + NODE_H // 2
            if x2 <= x1:  # a back edge (cycle) or a self-loop: go round underneath
                low = max(sy, ty) + NODE_H + GAP_Y // 2
                path = f"M{x1},{y1} C{x1 + 60},{low} {x2 - 60},{low} {x2},{y2}"
                lx, ly = (x1 + x2) // 2, low - 4
            else:
                mid = (x1 + x2) // 2
                path = f"M{x1},{y1} C{mid},{y1} {mid},{y2} {x2},{y2}"
                lx, ly = mid, (y1 + y2) // 2 - 6
            out.append(f'<g class="edge" data-source="{escape(sub.source)}" '
                       f'data-target="{escape(d.id)}"><path d="{path}" fill="none" '
                       f'stroke="#5f6368" stroke-width="1.5" marker-end="url(#arrow)"/>'
                       f'{_edge_label(sub, lx, ly)}</g>')
    return out


def _hop_edges(found: list[Hop], lay: Layout) -> list[str]:
    """Per hop: its writer down to its topic (in the band below), its topic on to its
    reader."""
    out = []
    pos, w = lay.positions, lay.node_width
    for hop in found:
        (wx, wy), (tx, ty), (rx, ry) = pos[hop.writer], pos[hop.node], pos[hop.reader]
        if ty >= wy + NODE_H:  # from the writer's bottom to the topic's top
            x1, y1, x2, y2 = wx + w // 2, wy + NODE_H, tx + w // 2, ty
            mid = (y1 + y2) // 2
            down = f"M{x1},{y1} C{x1},{mid} {x2},{mid} {x2},{y2}"
        else:  # not below (cannot happen with hops' layout, but never draw nothing)
            x1, y1, x2, y2 = wx + w, wy + NODE_H // 2, tx, ty + NODE_H // 2
            down = f"M{x1},{y1} L{x2},{y2}"
        x1, y1, x2 = tx + w, ty + NODE_H // 2, rx
        mid = (x1 + x2) // 2
        across = f"M{x1},{y1} C{mid},{y1} {mid},{ry + NODE_H // 2} {x2},{ry + NODE_H // 2}"
        for source, target, path in ((hop.writer, hop.node, down),
                                     (hop.node, hop.reader, across)):
            out.append(f'<g class="edge hop" data-source="{escape(source)}" '
                       f'data-target="{escape(target)}"><path d="{path}" fill="none" '
                       f'stroke="#8e24aa" stroke-width="1.5" marker-end="url(#arrow)"/></g>')
    return out


def _topic_node(hop: Hop, x: int, y: int, w: int) -> str:
    """A hop's topic: its name, what it is and the key its records carry."""
    lines = [f"repartition topic of {hop.bolt}",
             f"key: {', '.join(hop.key) or '-'}"]
    text = [f'<text x="{x + PAD}" y="{y + 20}" class="name">'
            f'{escape(fit(hop.topic, w - 2 * PAD, NAME_PX, bold=True))}</text>']
    text += [f'<text x="{x + PAD}" y="{y + 38 + i * 15}">'
             f'{escape(fit(line, w - 2 * PAD, LINE_PX))}</text>' for i, line in enumerate(lines)]
    return (f'<g class="node topic" data-topic="{escape(hop.topic)}" '
            f'data-hop="{escape(hop.bolt)}"><title>Kafka topic {escape(hop.topic)}</title>'
            f'<rect x="{x}" y="{y}" width="{w}" height="{NODE_H}" rx="2" fill="#f3e8fd" '
            f'stroke="#8e24aa" stroke-width="1.5" stroke-dasharray="5 3"/>{"".join(text)}</g>')


def _edge_label(sub: Any, x: int, y: int) -> str:
    """``stream · grouping`` on one line where it fits the gap between columns, else on
    two (stream above, grouping below), each cut to fit."""
    room = GAP_X + 8
    one = f"{sub.stream} · {_grouping(sub)}"
    start = f'<text x="{x}" y="{y}" text-anchor="middle" class="edge-label">'
    if text_width(one, EDGE_PX) <= room:
        return f"{start}{escape(one)}</text>"
    # The trailing space keeps the words apart in the text content (SVG does not draw it).
    top = escape(fit(f"{sub.stream} · ", room, EDGE_PX))
    low = escape(fit(_grouping(sub), room, EDGE_PX))
    return (f'{start}<tspan x="{x}" dy="-6">{top}</tspan>'
            f'<tspan x="{x}" dy="{EDGE_PX + 1}">{low}</tspan></text>')


def _compact(value: Any) -> str:
    """``723000`` → ``723k``: node text stays inside its box."""
    if not isinstance(value, int | float):
        return "-"
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= div:
            return f"{value / div:.3g}{suffix}"
    return f"{value:g}"


def _rate(value: Any) -> str:
    return "-" if value is None else f"{_compact(round(value, 1))}/s"


def _percent(ratio: float | None) -> str:
    if ratio is None:
        return "-"
    return "<1%" if 0 < ratio < 0.01 else f"{ratio * 100:.0f}%"


def _node_lines(cid: str, d: Any, figures: Mapping[str, Any] | None) -> list[str]:
    executors = f"{d.parallelism} executor{'s' if d.parallelism != 1 else ''}"
    lines = [f"{d.kind} · {executors}"
             + (f", {d.num_tasks} tasks" if d.num_tasks != d.parallelism else "")]
    if figures is None:
        return lines
    f = figures.get(cid) or {}
    failed = f"failed {_percent(f.get('failedRatio'))}"
    if d.is_spout:
        limit = f.get("inFlightLimit")
        lines.append(f"pending {_compact(f.get('pending'))}/"
                     f"{'∞' if limit is None else _compact(limit)}"
                     f" · timeouts {_compact(f.get('timedOut'))}")
        lines.append(f"acked {_rate(f.get('ackedPerSec'))} · {failed}")
    else:
        cap = f.get("capacity")
        lines.append(f"capacity {'-' if cap is None else f'{cap:.3f}'} · {failed}")
        lines.append(f"executed {_compact(f.get('executed'))} · "
                     f"{_rate(f.get('executedPerSec'))}")
    return lines


def _node_width(names: list[str], lines: list[list[str]]) -> int:
    """Wide enough for the widest text, between ``NODE_W`` and ``NODE_W_MAX``."""
    widest = max([text_width(n, NAME_PX, bold=True) for n in names]
                 + [text_width(t, LINE_PX) for ls in lines for t in ls], default=0.0)
    return max(NODE_W, min(NODE_W_MAX, int(widest) + 1 + 2 * PAD))


def _node(cid: str, d: Any, x: int, y: int, w: int, lines: list[str],
          f: Mapping[str, Any] | None) -> str:
    """One component's box and text; ``f`` its figures (``None``: drawn without)."""
    figures = f or {}
    alarm = (figures.get("failedRatio") or 0.0) >= ALARM_FAILED_RATIO
    stroke = ' stroke="#c5221f" stroke-width="2.5"' if alarm else (
        ' stroke="#1a73e8" stroke-width="1.5"' if d.is_spout else
        ' stroke="#3c4043" stroke-width="1.2"')
    if d.is_spout:
        fill, rx = _spout_fill(figures), 26
    else:
        fill = ("#e8eaed" if f is None else
                health_colour(figures.get("capacity"), figures.get("failedRatio")))
        rx = 6
    text = [f'<text x="{x + PAD}" y="{y + 20}" class="name">'
            f'{escape(fit(cid, w - 2 * PAD, NAME_PX, bold=True))}</text>']
    for i, line in enumerate(lines):
        text.append(f'<text x="{x + PAD}" y="{y + 38 + i * 15}">'
                    f'{escape(fit(line, w - 2 * PAD, LINE_PX))}</text>')
    return (f'<g class="node {d.kind}{" alarm" if alarm else ""}" '
            f'data-component="{escape(cid)}"><title>{escape(cid)}</title>'
            f'<rect x="{x}" y="{y}" width="{w}" height="{NODE_H}" rx="{rx}" fill="{fill}"'
            f'{stroke}/>{"".join(text)}</g>')


def render_svg(topology: Topology, figures: Mapping[str, Mapping[str, Any]] | None = None,
               title: str | None = None) -> str:
    """The SVG document for ``topology``; ``figures`` (by component id, Storm UI field
    names as in the JSON API) adds colours and numbers."""
    comps = topology.components
    found = hops(topology)
    lines = {cid: _node_lines(cid, d, figures) for cid, d in comps.items()}
    lay = layout(topology, _node_width([*comps, *(h.topic for h in found)],
                                       list(lines.values())))
    top = 28 if title else 0
    height = lay.height + top
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="topology" '
             f'width="{lay.width}" height="{height}" viewBox="0 0 {lay.width} {height}" '
             f'style="max-width:100%;height:auto;min-width:{int(lay.width * MIN_SCALE)}px" '
             f'font-family="sans-serif" font-size="{LINE_PX}">',
             '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" '
             'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
             '<path d="M0,0 L10,5 L0,10 z" fill="#5f6368"/></marker></defs>',
             f'<style>.edge-label{{fill:#3c4043;font-size:{EDGE_PX}px}}'
             f'.name{{font-weight:bold;font-size:{NAME_PX}px}}</style>']
    if title:
        parts.append(f'<text x="{MARGIN}" y="20" class="name">{escape(title)}</text>')
    parts.append(f'<g transform="translate(0,{top})">')
    parts.extend(_edges(topology, lay))
    parts.extend(_hop_edges(found, lay))
    for hop in found:
        parts.append(_topic_node(hop, *lay.positions[hop.node], lay.node_width))
    for cid, d in comps.items():
        x, y = lay.positions[cid]
        f = None if figures is None else (figures.get(cid) or {})
        parts.append(_node(cid, d, x, y, lay.node_width, lines[cid], f))
    parts.append("</g></svg>")
    return "\n".join(parts)
