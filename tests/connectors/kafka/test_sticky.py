"""The sticky assignment: a join or a leave moves the fewest partitions, counts differ by
at most one, and the same input always gives the same assignment."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from connectors.kafka.sticky import Member, sticky_assign

T = "t"


def held(assignment: dict[str, dict[str, list[int]]], topic: str = T) -> dict[str, set[int]]:
    return {m: set(parts.get(topic, ())) for m, parts in assignment.items()}


def members(holdings: dict[str, set[int]], rnd: int = 1, topics: tuple[str, ...] = (T,),
            **new: tuple[str, ...]) -> dict[str, Member]:
    """Members holding ``holdings`` of ``T`` since round ``rnd``, plus newcomers ``new``."""
    out = {m: Member(topics, {T: sorted(ps)}, rnd) for m, ps in holdings.items()}
    out.update({m: Member(ts) for m, ts in new.items()})
    return out


def moved(before: dict[str, set[int]], after: dict[str, set[int]]) -> int:
    """Partitions that left the member holding them before."""
    return sum(len(ps - after.get(m, set())) for m, ps in before.items())


def test_a_join_moves_only_the_newcomers_share() -> None:
    before = {"a": {0, 1, 2}, "b": {3, 4, 5}}
    after = held(sticky_assign({T: range(6)}, members(before, c=(T,))))
    assert after["a"] <= before["a"] and after["b"] <= before["b"]
    assert [len(after[m]) for m in "abc"] == [2, 2, 2]
    assert moved(before, after) == 2  # one from each: the newcomer's share


def test_a_leave_hands_out_only_the_leavers_partitions() -> None:
    before = {"a": {0, 3}, "b": {1, 4}, "c": {2, 5}}
    after = held(sticky_assign({T: range(6)}, members({m: before[m] for m in "ab"})))
    assert after["a"] >= before["a"] and after["b"] >= before["b"]
    assert after["a"] | after["b"] == set(range(6)) and len(after["a"]) == len(after["b"]) == 3


def test_uneven_counts_go_to_the_members_that_hold_more() -> None:
    before = {"a": {0, 1, 2, 3}, "b": {4}, "c": set()}
    after = held(sticky_assign({T: range(7)}, members(before)))
    # 7 over 3: shares 3, 2, 2; a keeps 3 of its 4, b keeps its one.
    assert sorted(len(p) for p in after.values()) == [2, 2, 3]
    assert len(after["a"]) == 3 and after["a"] <= before["a"] and 4 in after["b"]
    assert moved(before, after) == 1


def test_new_partitions_go_to_the_least_loaded() -> None:
    before = {"a": {0, 1}, "b": {2}}
    after = held(sticky_assign({T: range(4)}, members(before)))
    assert after == {"a": {0, 1}, "b": {2, 3}}


def test_a_stale_claim_loses_to_a_later_round() -> None:
    ms = {"a": Member((T,), {T: [0, 1]}, round=3), "b": Member((T,), {T: [0]}, round=5)}
    after = held(sticky_assign({T: range(2)}, ms))
    assert after == {"a": {1}, "b": {0}}


def test_claims_on_partitions_that_do_not_exist_are_ignored() -> None:
    after = held(sticky_assign({T: range(2)}, members({"a": {0, 1, 7}, "b": set()})))
    assert sorted(len(p) for p in after.values()) == [1, 1] and 7 not in after["a"]


def test_each_topic_goes_to_its_subscribers_only() -> None:
    ms = {"spout": Member(("in",)), "reader": Member(("hop",)), "both": Member(("in", "hop"))}
    out = sticky_assign({"in": range(4), "hop": range(2)}, ms)
    assert set(out["spout"]) <= {"in"} and set(out["reader"]) <= {"hop"}
    assert sum(len(out[m].get("in", ())) for m in out) == 4
    assert sum(len(out[m].get("hop", ())) for m in out) == 2


def test_the_same_input_in_any_order_gives_the_same_assignment() -> None:
    before = {"a": {0, 5}, "b": {1, 2, 3, 4}, "c": set(), "d": {6}}
    ms = members(before)
    first = sticky_assign({T: range(9), "u": range(3)}, ms)
    items = list(ms.items())
    for seed in range(5):
        random.Random(seed).shuffle(items)
        assert sticky_assign({"u": range(3), T: list(reversed(range(9)))}, dict(items)) == first


holdings = st.dictionaries(st.sampled_from("abcdef"), st.sets(st.integers(0, 11), max_size=6),
                           min_size=1)


@settings(max_examples=300, deadline=None)
@given(holdings, st.integers(1, 12), st.integers(0, 3))
def test_balanced_and_fewest_moved(before: dict[str, set[int]], n: int, newcomers: int) -> None:
    """Any holdings (even overlapping claims), any partition count, up to three newcomers:
    every partition assigned once, counts within one, and only partitions that balance
    forces out of a member move."""
    # Overlapping claims: the lower member id wins on equal rounds; that is what is held.
    owner: dict[int, str] = {}
    for m in sorted(before):
        for p in before[m]:
            owner.setdefault(p, m)
    truly = {m: {p for p, o in owner.items() if o == m and p < n} for m in before}
    new = {f"new{i}": (T,) for i in range(newcomers)}
    after = held(sticky_assign({T: range(n)}, members(before, **new)))
    got = sorted(p for ps in after.values() for p in ps)
    assert got == list(range(n))
    counts = [len(ps) for ps in after.values()]
    assert max(counts) - min(counts) <= 1
    base, extra = divmod(n, len(after))
    # The most that can stay: each member's holdings up to the share, plus one more for as
    # many members holding more than the share as there are shares of one more.
    most_kept = (sum(min(len(ps), base) for ps in truly.values())
                 + min(extra, sum(1 for ps in truly.values() if len(ps) > base)))
    assert moved(truly, after) == sum(len(ps) for ps in truly.values()) - most_kept
