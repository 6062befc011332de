"""The bound in bytes on a spout task's trees in flight (``topology.spout.max.pending.bytes``),
on virtual time: large values into a slow bolt stay under the budget, small ones are not
weighed, the limit on trees does not grow meanwhile, and a bad value is one clear line."""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import Any

import pytest

from engine import Bolt, Config, LocalCluster, Spout, TopologyBuilder
from engine.config import DEFAULTS, TOPOLOGY_SPOUT_MAX_PENDING_BYTES
from engine.errors import ConfigError
from engine.flow_control import INITIAL_LIMIT
from engine.spout_collector import LARGE_TREE_BYTES, tree_bytes, values_bytes
from engine.testing import VirtualTimePolicy

MiB = 2**20
EXECUTE_SECS = 0.05  # the slow bolt: 20 trees/s
KEY = TOPOLOGY_SPOUT_MAX_PENDING_BYTES


@pytest.fixture
def event_loop_policy() -> VirtualTimePolicy:
    return VirtualTimePolicy()


class Heavy:
    """A value that says it weighs ``size`` bytes (``sys.getsizeof``) without holding them."""

    def __init__(self, size: int) -> None:
        self.size = size

    def __sizeof__(self) -> int:
        return self.size


class HeavySpout(Spout):
    """Emits one value of ``size`` bytes per call, as fast as allowed; notes the most trees
    it had in flight (emitted, not yet acked or failed)."""

    def __init__(self, size: int, seen: dict[str, int]) -> None:
        self.size = size
        self.seen = seen  # shared with the copy the engine runs

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["payload"])

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector
        self.in_flight: set[int] = set()
        self.next_id = 0

    def next_tuple(self) -> None:
        i, self.next_id = self.next_id, self.next_id + 1
        self.collector.emit([Heavy(self.size)], msg_id=i)
        self.in_flight.add(i)
        self.seen["peak"] = max(self.seen.get("peak", 0), len(self.in_flight))

    def ack(self, msg_id: Any) -> None:
        self.in_flight.discard(msg_id)
        self.seen["acked"] = self.seen.get("acked", 0) + 1

    def fail(self, msg_id: Any) -> None:
        self.in_flight.discard(msg_id)


class SlowBolt(Bolt):
    """``EXECUTE_SECS`` per tuple without holding the loop, then acks."""

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    async def execute(self, tup: Any) -> None:
        await asyncio.sleep(EXECUTE_SECS)
        self.collector.ack(tup)


async def run(size: int, secs: float, **conf: Any) -> tuple[dict[str, int], dict[str, Any]]:
    """The spout's figures and ``stats()["components"]["s"]`` after ``secs``."""
    seen: dict[str, int] = {}
    b = TopologyBuilder()
    b.set_spout("s", HeavySpout(size, seen))
    b.set_bolt("slow", SlowBolt()).shuffle_grouping("s")
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", Config(conf), b.create_topology())
        await asyncio.sleep(secs)
        return dict(seen), cluster.stats("t")["components"]["s"]


async def test_large_values_stay_under_the_default_budget(caplog: Any) -> None:
    caplog.set_level(logging.INFO, logger="engine")
    size = 10 * MiB
    seen, stats = await run(size, 20)
    budget = DEFAULTS[KEY]
    # The check runs before each next_tuple call: one tree past the budget at most.
    assert seen["peak"] * size <= budget + size, seen
    assert 0 < stats["pending_bytes"] <= budget + size
    assert seen["acked"] >= 0.9 * 20 / EXECUTE_SECS  # the bolt is kept busy all the same
    # Trees held back by their bytes must not grow the limit on their number.
    assert stats["in_flight_limit"] <= INITIAL_LIMIT
    said = [r.getMessage() for r in caplog.records if KEY in r.getMessage()]
    assert len(said) == 1 and "spout 's'" in said[0], said


async def test_a_smaller_budget_holds_fewer_trees() -> None:
    seen, _ = await run(MiB, 5, **{KEY: 4 * MiB})
    assert seen["peak"] <= 5, seen


async def test_none_leaves_only_the_limit_on_trees() -> None:
    seen, _ = await run(MiB, 5, **{KEY: None})
    assert seen["peak"] > 5, seen


async def test_small_trees_are_not_recorded() -> None:
    seen, stats = await run(LARGE_TREE_BYTES - 100, 2)
    assert seen["peak"] > 1 and stats["pending"] > 1
    assert stats["pending_bytes"] == 0


def test_values_are_weighed_by_their_top_level_size() -> None:
    assert values_bytes(["the cow jumped over the moon", 7, 1.5]) < LARGE_TREE_BYTES
    assert values_bytes([b"x" * 10 * MiB]) >= 10 * MiB
    assert values_bytes(["x" * 2048, Heavy(3000)]) >= 5048


def test_bytes_weigh_what_getsizeof_says() -> None:
    values = [b"", b"k" * 7, b"v" * 5000, bytearray(b"x" * 100), "text", None, 3]
    assert values_bytes(values) == sum(sys.getsizeof(v, 0) for v in values)


@pytest.mark.parametrize("value", [0, -1, 1.5, "256MB", True])
async def test_a_bad_budget_is_one_line_naming_the_key(value: Any) -> None:
    b = TopologyBuilder()
    b.set_spout("s", HeavySpout(1, {}))
    async with LocalCluster() as cluster:
        with pytest.raises(ConfigError) as err:
            await cluster.submit_topology("t", Config({KEY: value}), b.create_topology())
    line = str(err.value)
    assert "\n" not in line and KEY in line and "an int of bytes >= 1 or None" in line


def test_a_tree_is_weighed_exactly_whenever_it_may_be_large() -> None:
    wide = "\U0001f600" * 300  # four bytes a character, and a cached UTF-8 copy
    wide.encode("utf-8")
    assert values_bytes([wide]) >= LARGE_TREE_BYTES
    for values in ([wide], ["x" * 2000], ["a", "x" * 1100], [b"x" * 2000], [list(range(200))]):
        assert tree_bytes(values) == values_bytes(values) >= LARGE_TREE_BYTES, values
    for values in (["the cow jumped over the moon"], ["x" * 100, "y"], [], [7, "w"]):
        assert values_bytes(values) < LARGE_TREE_BYTES
        assert tree_bytes(values) in (0, values_bytes(values))
