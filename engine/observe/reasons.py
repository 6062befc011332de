"""Failed trees split by reason: ``explicit``, ``timeout``, ``error``.

Spout tasks that count fails by kind report ``failed_explicit``, ``failed_timeout`` and
``failed_error``; those counters are used as they are. Where they are absent, a topology
with a single spout component attributes the ackers' timed-out trees to it (capped by
its fails) and the rest to ``explicit``; with several spouts every fail counts as
``explicit``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["fails_by_reason"]

_KEYS = {"explicit": "failed_explicit", "timeout": "failed_timeout", "error": "failed_error"}


def fails_by_reason(stats: Mapping[str, Any], component: str) -> dict[str, int]:
    """``{"explicit": n, "timeout": n, "error": n}`` for ``component`` (a spout or bolt)."""
    comp = stats["components"][component]
    failed = int(comp.get("failed", 0))
    if any(key in comp for key in _KEYS.values()):
        return {reason: int(comp.get(key, 0)) for reason, key in _KEYS.items()}
    timeout = 0
    if comp.get("kind") == "spout" and failed and _only_spout(stats, component):
        timeout = min(failed, int(stats["components"].get("__acker", {}).get("timed_out", 0)))
    return {"explicit": failed - timeout, "timeout": timeout, "error": 0}


def _only_spout(stats: Mapping[str, Any], component: str) -> bool:
    return all(c.get("kind") != "spout" or cid == component
               for cid, c in stats["components"].items())
