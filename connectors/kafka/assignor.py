"""The partition assignor of the engine's Kafka spouts: sticky, and one topology per group.

Every consumer a ``KafkaSpout`` (or a repartition hop's reader) starts gets its own
``GroupAssignor`` (``strategy``), unless its consumer options name a
``partition_assignment_strategy`` of their own. It is the only protocol they offer: a
client that offers none but Kafka's own cannot join their group (the broker refuses it
with ``InconsistentGroupProtocolError``), so that no member goes unchecked. (Offering
round robin second, as a fallback for such a client, made the test broker leave a
restarted static member without an assignment.) Nothing is shared between consumers: the
state a member keeps (what it holds, from which round) lives in its assignor instance.

Each member states in its join's user data (JSON):

- the fingerprint of the topology its process runs (``engine.keyed.fingerprint``): digest
  and summary;
- the partitions it holds, and the assignment round it got them in (0 before its first).

The leader (one member, chosen by the broker) computes the assignment:

- the group's topology is the one the running members state, those that already got an
  assignment (round above 0): the fingerprint most of them state (then the latest round,
  then the lowest digest); with none running yet, the one most members state (then the
  lowest digest). A member of the running version is never refused because of a
  newcomer;
- members stating another fingerprint get no partitions and an ``error`` in their
  assignment's user data; the leader logs one WARNING naming how many and what differs;
- the others share the partitions as ``sticky.sticky_assign`` says: each keeps what it
  holds as long as balance allows, only the surplus moves.

Every assignment's user data carries the group's digest and summary and the new round.
A member whose own digest differs from the group's (the leader refused it, or a static
member's broker handed back an assignment made before it restarted with another topology)
calls ``refuse`` once with one line saying what differs: the engine then stops with exit
status 2. A member with no
fingerprint (a spout opened outside the engine's runtime) states none and is never
refused.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiokafka.cluster import ClusterMetadata
from aiokafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from aiokafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)

from connectors.kafka.sticky import Member, sticky_assign
from engine.keyed.fingerprint import TopologyFingerprint, differences

__all__ = ["NAME", "GroupAssignor", "Stated", "group_version", "refusal", "strategy"]

log = logging.getLogger("connectors.kafka")

NAME = "stormloop-sticky"
"""The assignment protocol's name in the group (members must all offer it)."""

_FORMAT = 1  # of the user data, in both directions
_SHOWN = 3  # differences named in a refusal line


@dataclass(frozen=True, slots=True)
class Stated:
    """What one member stated when it joined (from its metadata's user data)."""

    topics: tuple[str, ...]
    digest: str = ""
    summary: Mapping[str, Any] = field(default_factory=dict)
    held: Mapping[str, list[int]] = field(default_factory=dict)
    round: int = 0

    @classmethod
    def decode(cls, metadata: ConsumerProtocolMemberMetadata) -> Stated:
        """A member's statement; user data that is not ours states nothing but topics."""
        topics = tuple(sorted(metadata.subscription))
        data = _decode(metadata.user_data)
        try:
            held = {str(t): sorted(int(p) for p in ps) for t, ps in data.get("held", {}).items()}
            return cls(topics, str(data.get("fp", "")), dict(data.get("topology") or {}),
                       held, int(data.get("round", 0)))
        except (TypeError, ValueError, AttributeError):
            return cls(topics)


def group_version(stated: Mapping[str, Stated]) -> Stated | None:
    """The member whose fingerprint is the group's (see the module docstring), or None
    when no member states one."""
    known = {m: s for m, s in stated.items() if s.digest}
    running = {m: s for m, s in known.items() if s.round > 0} or known
    if not running:
        return None
    votes = Counter(s.digest for s in running.values())
    latest = {d: max(s.round for s in running.values() if s.digest == d) for d in votes}
    digest = min(votes, key=lambda d: (-votes[d], -latest[d], d))
    return next(running[m] for m in sorted(running) if running[m].digest == digest)


def refusal(own: TopologyFingerprint, digest: str, summary: Mapping[str, Any]) -> str:
    """What differs between ``own`` and the group's topology, in words (at most three
    differences named)."""
    found = differences(own.summary, summary)
    if not found:
        return f"its topology fingerprint is {digest}, this process's {own.digest}"
    more = len(found) - _SHOWN
    return "; ".join(found[:_SHOWN]) + (f"; and {more} more" if more > 0 else "")


class GroupAssignor(AbstractPartitionAssignor):
    """One consumer's assignor (see the module docstring); never share an instance."""

    name = NAME
    version = 1

    def __init__(self, fingerprint: TopologyFingerprint | None, group: str, who: str,
                 refuse: Callable[[str], None]) -> None:
        self._fingerprint = fingerprint
        self._group = group
        self._who = who
        self._refuse = refuse
        self._held: dict[str, list[int]] = {}
        self._round = 0
        self.refused: str | None = None
        """The line this member was refused with, or None."""

    def metadata(self, topics: Iterable[str]) -> ConsumerProtocolMemberMetadata:
        """This member's statement: its fingerprint, what it holds and since which round."""
        fp = self._fingerprint
        data = {"v": _FORMAT, "fp": "" if fp is None else fp.digest,
                "topology": {} if fp is None else fp.summary, "held": self._held,
                "round": self._round}
        return ConsumerProtocolMemberMetadata(self.version, sorted(topics), _encode(data))

    def assign(self, cluster: ClusterMetadata,
               members: Mapping[str, ConsumerProtocolMemberMetadata],
               ) -> dict[str, ConsumerProtocolMemberAssignment]:
        """The leader's assignment: members of another topology refused, the rest sticky."""
        stated = {m: Stated.decode(meta) for m, meta in members.items()}
        version = group_version(stated)
        refused = sorted(m for m, s in stated.items()
                         if version is not None and s.digest and s.digest != version.digest)
        topics = {t for s in stated.values() for t in s.topics}
        partitions = {t: sorted(cluster.partitions_for_topic(t) or ()) for t in topics}
        plan = sticky_assign(partitions, {m: Member(s.topics, s.held, s.round)
                                          for m, s in stated.items() if m not in refused})
        reply: dict[str, Any] = {
            "v": _FORMAT, "round": max((s.round for s in stated.values()), default=0) + 1,
            "fp": "" if version is None else version.digest,
            "topology": {} if version is None else version.summary}
        if refused and version is not None:
            self._log_refused(refused, stated, version)
        return {m: ConsumerProtocolMemberAssignment(
                    self.version, sorted(plan.get(m, {}).items()),
                    _encode({**reply, "error": "topology differs"} if m in refused else reply))
                for m in members}

    def _log_refused(self, refused: list[str], stated: Mapping[str, Stated],
                     version: Stated) -> None:
        first = stated[refused[0]]
        found = differences(first.summary, version.summary, this="in the refused member")
        what = "; ".join(found[:_SHOWN]) if found else f"fingerprint {first.digest}"
        log.warning("consumer group %r: %d member(s) run a topology other than the group's "
                    "and get no partitions: %s", self._group, len(refused), what)

    def on_assignment(self, assignment: ConsumerProtocolMemberAssignment) -> None:
        """Remember what this member now holds, or refuse it if the group's topology is
        not its own."""
        data = _decode(assignment.user_data)
        fp = self._fingerprint
        # The group's fingerprint decides, not the error: a static member restarted with
        # the group's topology can be handed back the assignment that refused it before.
        if fp is not None and fp.digest and data.get("fp") not in (None, "", fp.digest):
            self._held = {}
            self._refuse_once(fp, data)
            return
        self._held = {t: sorted(ps) for t, ps in assignment.assignment}
        with contextlib.suppress(TypeError, ValueError):
            self._round = int(data.get("round", self._round))

    def _refuse_once(self, fp: TopologyFingerprint, data: Mapping[str, Any]) -> None:
        if self.refused is not None:
            return
        summary = data.get("topology")
        what = refusal(fp, str(data.get("fp") or "unknown"),
                       summary if isinstance(summary, dict) else {})
        self.refused = (f"{self._who}: consumer group {self._group!r} runs another topology, "
                        f"so this member got no partitions: {what}; to change what a group "
                        f"runs, stop every member first or use a new group id "
                        f"(docs/scaling.md)")
        self._refuse(self.refused)


def strategy(consumer_options: Mapping[str, Any], fingerprint: TopologyFingerprint | None,
             group: str, who: str, refuse: Callable[[str], None]) -> dict[str, Any]:
    """The keyword a spout's consumer is built with: a new ``GroupAssignor`` as its only
    ``partition_assignment_strategy``, or nothing when ``consumer_options`` name one."""
    if "partition_assignment_strategy" in consumer_options:
        return {}
    return {"partition_assignment_strategy": (GroupAssignor(fingerprint, group, who, refuse),)}


def _encode(data: Mapping[str, Any]) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":")).encode()


def _decode(raw: bytes | None) -> dict[str, Any]:
    if not raw:
        return {}
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) and data.get("v") == _FORMAT else {}
