"""Sticky partition assignment: a rebalance moves the fewest partitions that balance allows.

``sticky_assign`` is the group leader's computation, a pure function of what each member
subscribes to and says it holds:

- per topic, the members subscribed to it share its partitions so that their counts
  differ by at most one;
- a member keeps every partition it holds while that count allows; a member that holds
  more than its share keeps the lowest-numbered ones, and the members holding the most
  get the shares of one more, so that the fewest partitions move;
- partitions no one keeps (new ones, those of members that left, the surplus) go, lowest
  first, to the least loaded member: fewest of the topic, then fewest overall, then the
  lowest member id;
- two members claiming one partition (one was dropped from the group and still believes
  it holds it) are settled by the assignment round each claim comes from: the later wins,
  then the lower member id.

The same input gives the same assignment, whatever the order of the mappings.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["Member", "sticky_assign"]

Assignment = dict[str, dict[str, list[int]]]
"""``{member: {topic: partitions}}``."""


@dataclass(frozen=True, slots=True)
class Member:
    """What a member told the leader: its topics, what it holds and from which round."""

    topics: Collection[str]
    held: Mapping[str, Collection[int]] = field(default_factory=dict)
    round: int = 0


def sticky_assign(partitions: Mapping[str, Sequence[int]],
                  members: Mapping[str, Member]) -> Assignment:
    """Each of ``members`` (member id -> ``Member``) with its share of ``partitions``
    (topic -> partition numbers), as the module docstring says."""
    out: Assignment = {m: {} for m in sorted(members)}
    load = dict.fromkeys(out, 0)
    for topic in sorted(partitions):
        readers = [m for m in out if topic in members[m].topics]
        if not readers:
            continue
        owned = _owners(topic, set(partitions[topic]), readers, members)
        for m, parts in _balanced(sorted(set(partitions[topic])), readers, owned,
                                  load).items():
            if parts:
                out[m][topic] = parts
    return out


def _owners(topic: str, exists: set[int], readers: list[str],
            members: Mapping[str, Member]) -> dict[str, list[int]]:
    """Each reader's claims on ``topic`` that exist and that no later claim beats."""
    best: dict[int, tuple[int, str]] = {}
    for m in readers:  # sorted: on equal rounds the lower member id is seen first
        rnd = members[m].round
        for p in set(members[m].held.get(topic, ())) & exists:
            if p not in best or rnd > best[p][0]:
                best[p] = (rnd, m)
    owned: dict[str, list[int]] = {m: [] for m in readers}
    for p, (_, m) in best.items():
        owned[m].append(p)
    return {m: sorted(parts) for m, parts in owned.items()}


def _balanced(parts: list[int], readers: list[str], owned: Mapping[str, list[int]],
              load: dict[str, int]) -> dict[str, list[int]]:
    """``parts`` shared by ``readers``: what each keeps of ``owned``, then the rest to the
    least loaded (``load``, partitions of earlier topics, is updated)."""
    base, extra = divmod(len(parts), len(readers))
    got: dict[str, list[int]] = {}
    for m in sorted(readers, key=lambda r: (-len(owned[r]), r)):
        cap = base + 1 if extra and len(owned[m]) > base else base
        extra -= cap - base
        got[m] = owned[m][:cap]
    kept = {p for ps in got.values() for p in ps}
    least = [(len(got[m]), load[m], m) for m in readers if len(got[m]) <= base]
    heapq.heapify(least)
    for p in (p for p in parts if p not in kept):
        while least[0][0] == base and not extra:  # at its share, and no share of one more left
            heapq.heappop(least)
        count, _, m = heapq.heappop(least)
        if count == base:
            extra -= 1
        got[m].append(p)
        if count + 1 <= base:
            heapq.heappush(least, (count + 1, load[m], m))
    for m in readers:
        got[m].sort()
        load[m] += len(got[m])
    return got
