"""The topology drawn as SVG: layout computed here, no browser script needed.

Components are placed in layers by their longest path from a spout (cycles are cut),
ordered within a layer by the mean position of their sources, and joined by curved edges
labelled ``stream · grouping``. With figures, bolts are coloured by capacity (green →
amber → red) and spouts show pending trees and timeouts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from html import escape
from itertools import pairwise
from typing import Any

from engine.topology import Topology

__all__ = ["Layout", "capacity_colour", "layout", "render_svg"]

NODE_W, NODE_H = 200, 64
GAP_X, GAP_Y = 120, 34
MARGIN = 24


@dataclass(frozen=True, slots=True)
class Layout:
    """Node positions (top-left corners) and the drawing's size."""

    positions: dict[str, tuple[int, int]]
    width: int
    height: int


def _layers(topology: Topology) -> dict[str, int]:
    comps = topology.components
    layer = {cid: 0 for cid in comps}
    # Longest path by relaxation; at most len(comps) rounds, so a cycle cannot loop forever.
    for _ in range(len(comps)):
        changed = False
        for d in comps.values():
            for sub in d.inputs:
                if sub.source in layer and sub.source != d.id \
                        and layer[sub.source] + 1 > layer[d.id] and not d.is_spout:
                    layer[d.id] = min(layer[sub.source] + 1, len(comps))
                    changed = True
        if not changed:
            break
    return layer


def layout(topology: Topology) -> Layout:
    """Positions of every component: one column per layer, sources to the left."""
    layer = _layers(topology)
    columns: dict[int, list[str]] = {}
    for cid in topology.components:
        columns.setdefault(layer[cid], []).append(cid)
    rank: dict[str, float] = {}
    for col in sorted(columns):
        def key(cid: str) -> float:
            srcs = [rank[s.source] for s in topology.components[cid].inputs if s.source in rank]
            return sum(srcs) / len(srcs) if srcs else 0.0
        members = sorted(columns[col], key=key) if col else columns[col]
        columns[col] = members
        for i, cid in enumerate(members):
            rank[cid] = float(i)
    tallest = max(len(m) for m in columns.values()) if columns else 1
    height = MARGIN * 2 + tallest * NODE_H + (tallest - 1) * GAP_Y
    positions = {}
    for col, members in columns.items():
        span = len(members) * NODE_H + (len(members) - 1) * GAP_Y
        top = (height - span) // 2
        for i, cid in enumerate(members):
            positions[cid] = (MARGIN + col * (NODE_W + GAP_X), top + i * (NODE_H + GAP_Y))
    width = MARGIN * 2 + (max(columns, default=0) + 1) * (NODE_W + GAP_X) - GAP_X
    return Layout(positions, width, height)


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


def _grouping(sub: Any) -> str:
    if sub.kind == "fields" and sub.fields:
        return f"fields({', '.join(sub.fields)})"
    return str(sub.kind)


def _edges(topology: Topology, pos: Mapping[str, tuple[int, int]]) -> list[str]:
    out = []
    for d in topology.components.values():
        spread = (len(d.inputs) - 1) / 2
        for n, sub in enumerate(d.inputs):
            if sub.source not in pos:
                continue
            sx, sy = pos[sub.source]
            tx, ty = pos[d.id]
            x1, y1 = sx + NODE_W, sy + NODE_H // 2 + round((n - spread) * 8)
            x2, y2 = tx, ty + NODE_H // 2
            if x2 <= x1:  # a back edge (cycle) or a self-loop: go round underneath
                low = max(sy, ty) + NODE_H + GAP_Y // 2
                path = f"M{x1},{y1} C{x1 + 60},{low} {x2 - 60},{low} {x2},{y2}"
                lx, ly = (x1 + x2) // 2, low - 4
            else:
                mid = (x1 + x2) // 2
                path = f"M{x1},{y1} C{mid},{y1} {mid},{y2} {x2},{y2}"
                lx, ly = mid, (y1 + y2) // 2 - 6
            label = escape(f"{sub.stream} · {_grouping(sub)}")
            out.append(f'<g class="edge" data-source="{escape(sub.source)}" '
                       f'data-target="{escape(d.id)}"><path d="{path}" fill="none" '
                       f'stroke="#5f6368" stroke-width="1.5" marker-end="url(#arrow)"/>'
                       f'<text x="{lx}" y="{ly}" text-anchor="middle" class="edge-label">'
                       f'{label}</text></g>')
    return out


def _compact(value: Any) -> str:
    """``723000`` → ``723k``: node text stays inside its box."""
    if not isinstance(value, int | float):
        return "-"
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= div:
            return f"{value / div:.3g}{suffix}"
    return f"{value:g}"


def _node_lines(cid: str, d: Any, figures: Mapping[str, Any] | None) -> list[str]:
    executors = f"{d.parallelism} executor{'s' if d.parallelism != 1 else ''}"
    lines = [f"{d.kind} · {executors}"
             + (f", {d.num_tasks} tasks" if d.num_tasks != d.parallelism else "")]
    if figures is None:
        return lines
    f = figures.get(cid) or {}
    if d.is_spout:
        limit = f.get("inFlightLimit")
        lines.append(f"pending {_compact(f.get('pending'))}/"
                     f"{'∞' if limit is None else _compact(limit)}"
                     f" · timeouts {_compact(f.get('timedOut'))}")
    else:
        cap = f.get("capacity")
        lines.append(f"capacity {'-' if cap is None else f'{cap:.3f}'}"
                     f" · executed {_compact(f.get('executed'))}")
    return lines


def render_svg(topology: Topology, figures: Mapping[str, Mapping[str, Any]] | None = None,
               title: str | None = None) -> str:
    """The SVG document for ``topology``; ``figures`` (by component id, Storm UI field
    names as in the JSON API) adds colours and numbers."""
    lay = layout(topology)
    top = 28 if title else 0
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="topology" '
             f'width="{lay.width}" height="{lay.height + top}" '
             f'viewBox="0 0 {lay.width} {lay.height + top}" font-family="sans-serif" '
             f'font-size="12">',
             '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" '
             'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
             '<path d="M0,0 L10,5 L0,10 z" fill="#5f6368"/></marker></defs>',
             '<style>.edge-label{fill:#3c4043;font-size:11px}'
             '.name{font-weight:bold;font-size:13px}</style>']
    if title:
        parts.append(f'<text x="{MARGIN}" y="20" class="name">{escape(title)}</text>')
    parts.append(f'<g transform="translate(0,{top})">')
    parts.extend(_edges(topology, lay.positions))
    for cid, d in topology.components.items():
        x, y = lay.positions[cid]
        f = (figures or {}).get(cid) or {}
        if d.is_spout:
            fill = "#d2e3fc" if not f.get("timedOut") else "#fce8b2"
            shape = (f'<rect x="{x}" y="{y}" width="{NODE_W}" height="{NODE_H}" rx="26" '
                     f'fill="{fill}" stroke="#1a73e8" stroke-width="1.5"/>')
        else:
            fill = capacity_colour(f.get("capacity")) if figures is not None else "#e8eaed"
            shape = (f'<rect x="{x}" y="{y}" width="{NODE_W}" height="{NODE_H}" rx="6" '
                     f'fill="{fill}" stroke="#3c4043" stroke-width="1.2"/>')
        text = [f'<text x="{x + 12}" y="{y + 20}" class="name">{escape(cid)}</text>']
        for i, line in enumerate(_node_lines(cid, d, figures)):
            text.append(f'<text x="{x + 12}" y="{y + 38 + i * 15}">{escape(line)}</text>')
        parts.append(f'<g class="node {d.kind}" data-component="{escape(cid)}">'
                     f'<title>{escape(cid)}</title>{shape}{"".join(text)}</g>')
    parts.append("</g></svg>")
    return "\n".join(parts)
