"""The endpoint's routes, apart from any HTTP server: a GET's path and query in, a
``Response`` out.

Paths (relative to where the endpoint is mounted): ``metrics`` (Prometheus text),
``api/v1/topologies``, ``api/v1/topology/{name}?window=600|10800|:all-time``,
``api/v1/topology/{name}/component/{id}``, ``api/v1/topology/{name}/graph.svg``,
``healthz``, ``readyz`` and the empty path (the status page). Handlers only read figures:
none awaits, so a request cannot stall the topology for longer than it takes to answer.
A bad window, or an unknown topology or component, is a one-line JSON error (400, 404).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import orjson
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from engine.errors import TopologyError
from engine.observe.metrics import registry_for
from engine.observe.observer import Observer
from engine.observe.page import render_page
from engine.observe.svg import render_svg
from engine.observe.windows import parse_window

if TYPE_CHECKING:
    from engine.observe.observer import Topologies

__all__ = ["Response", "Routes"]

_JSON = "application/json; charset=utf-8"
_TEXT = "text/plain; charset=utf-8"


@dataclass(frozen=True, slots=True)
class Response:
    """What one request gets: status, ``Content-Type`` and the whole body."""

    status: int
    content_type: str
    body: bytes


def _json(data: object, status: int = 200) -> Response:
    return Response(status, _JSON, orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS))


def _text(text: str, status: int = 200, content_type: str = _TEXT) -> Response:
    return Response(status, content_type, text.encode())


class Routes:
    """The endpoint of one ``LocalCluster``: its observer, its metrics registry and the
    route table. ``observer.run()`` should run beside it (the servers start it).

    Components' errors are served as their exception type alone (``lastError``,
    ``errors``, ``componentErrors``, with ``traceback`` null) unless ``show_errors``.
    """

    def __init__(self, cluster: Topologies, show_errors: bool = False) -> None:
        self.observer = Observer(cluster, show_errors)
        self.registry = registry_for(self.observer)

    def respond(self, segments: list[str], query: Mapping[str, str]) -> Response:
        """The response to a GET of the path ``"/".join(segments)`` (segments decoded)."""
        try:
            return self._route(segments, query)
        except TopologyError as exc:  # before ValueError, its base
            return _json({"error": str(exc)}, 404)
        except ValueError as exc:
            return _json({"error": str(exc)}, 400)

    def _route(self, segments: list[str], query: Mapping[str, str]) -> Response:
        match segments:
            case [""] | []:
                return self._page(query)
            case ["metrics"]:
                return Response(200, CONTENT_TYPE_LATEST, generate_latest(self.registry))
            case ["healthz"]:
                return _text("ok\n")
            case ["readyz"]:
                why = self.observer.readiness()
                return _text("ready\n") if why is None else _text(f"not ready: {why}\n", 503)
            case ["api", "v1", "topologies"]:
                return _json(self.observer.topologies())
            case ["api", "v1", "topology", name]:
                return _json(self.observer.topology(name, parse_window(query.get("window"))))
            case ["api", "v1", "topology", name, "component", component]:
                return _json(self.observer.component(name, component,
                                                     parse_window(query.get("window"))))
            case ["api", "v1", "topology", name, "graph.svg"]:
                svg = self._svg(name, parse_window(query.get("window")))
                return _text(svg, content_type="image/svg+xml; charset=utf-8")
        return _text("404: Not Found", 404)

    def _svg(self, name: str, window: str) -> str:
        view = self.observer.topology(name, window)
        figures = {s["spoutId"]: s for s in view["spouts"]}
        figures.update({b["boltId"]: b for b in view["bolts"]})
        return render_svg(self.observer.runtime(name).topology, figures)

    def _page(self, query: Mapping[str, str]) -> Response:
        names = sorted(self.observer.runtimes())
        name = query.get("topology")
        if name not in names:
            name = names[0] if names else None
        window = parse_window(query.get("window"))
        svg = self._svg(name, window) if name else ""
        return _text(render_page(names, name, window, svg),
                     content_type="text/html; charset=utf-8")


