"""The runner's verdict on a finished run: did every tracked tuple get fully processed?

``stormloop run`` exits 0 when it did, 3 when it did not (below), 2 for invalid input (1
is Python's own status for a crash). A spout that reports ``given_up`` in its
``metrics()`` (``ListSpout``, ``QueueSpout``) or ``failed_topic_records`` (``KafkaSpout``)
replays its fails itself: only the tuples it gave up count against the run. A spout whose
class sets ``replays_failures = True`` (the transactional coordinator: it replays a failed
batch until it commits) is not judged by its fails. For any other spout, every failed
tree counts: nothing says it was replayed. Trees still pending when a stop's drain ended
do not count (a replaying source emits them again on its next run); the drain's warning
names them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.state.checkpoint import CHECKPOINT_COMPONENT
from engine.topology import ComponentDef, Topology

__all__ = ["EXIT_NOT_PROCESSED", "judged_spouts", "unprocessed", "user_spouts", "verdict"]

EXIT_NOT_PROCESSED = 3
"""Exit status of a run in which tuples were given up or failed without a replay."""

# metrics() keys through which a spout says how many tuples it gave up.
_GIVEN_UP_KEYS = ("given_up", "failed_topic_records")


def _given_up(tasks: Mapping[str, Mapping[str, Any]]) -> int | None:
    """Tuples a spout's tasks gave up, or None when the spout does not report it."""
    counts = [data[key] for data in tasks.values() for key in _GIVEN_UP_KEYS
              if isinstance(data.get(key), int)]
    return sum(counts) if counts else None


def user_spouts(topology: Topology) -> list[ComponentDef]:
    """The topology's spouts without the engine's own (the checkpoint spout of stateful
    bolts: its tuples are checkpoints, not input)."""
    return [d for d in topology.spouts() if d.id != CHECKPOINT_COMPONENT]


def judged_spouts(topology: Topology) -> dict[str, bool]:
    """``{spout id: whether its failed trees count}`` (False for ``replays_failures``)."""
    return {d.id: not getattr(d.obj, "replays_failures", False) for d in user_spouts(topology)}


def unprocessed(stats: Mapping[str, Any], spouts: Mapping[str, bool]
                ) -> dict[str, tuple[str, int]]:
    """``{spout: ("given up" | "failed", n)}`` for every spout with tuples that were not
    fully processed, from a topology's final ``stats`` (``spouts`` from ``judged_spouts``)."""
    out: dict[str, tuple[str, int]] = {}
    for cid, fails_count in spouts.items():
        given_up = _given_up(stats.get("metrics", {}).get(cid, {}))
        if given_up is not None:
            if given_up:
                out[cid] = ("given up", given_up)
            continue
        failed = int(stats["components"].get(cid, {}).get("failed", 0)) if fails_count else 0
        if failed:
            out[cid] = ("failed", failed)
    return out


def verdict(stats: Mapping[str, Any], spouts: Mapping[str, bool]) -> tuple[int, str | None]:
    """The exit status for a run that ended with ``stats``, and the line that explains a
    non-zero one."""
    missing = unprocessed(stats, spouts)
    if not missing:
        return 0, None
    parts = ", ".join(f"spout {cid!r}: {n} {how}" for cid, (how, n) in sorted(missing.items()))
    return EXIT_NOT_PROCESSED, (f"not every tuple was fully processed ({parts}); exit status "
                                f"{EXIT_NOT_PROCESSED}")
