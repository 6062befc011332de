"""``MemoryTransactionalSpout``'s halves, called directly: batches, replays, readiness."""

from __future__ import annotations

from typing import Any

from engine.transactional import MemoryTransactionalSpout, TransactionAttempt


class Collect:
    def __init__(self) -> None:
        self.values: list[list[Any]] = []

    def emit(self, values: list[Any], stream: str = "default") -> list[int]:
        self.values.append(values)
        return [1]


def test_batches_follow_each_other_and_replay_exactly() -> None:
    spout = MemoryTransactionalSpout({"a": [[i] for i in range(5)], "b": [[9]]}, ["n"], 2)
    emitter = spout.get_emitter({}, None)  # type: ignore[arg-type]
    a1, a2 = TransactionAttempt(1, 1), TransactionAttempt(2, 1)
    out = Collect()
    meta1 = emitter.emit_partition_batch_new(a1, out, 0, None)
    meta2 = emitter.emit_partition_batch_new(a2, out, 0, meta1)
    assert (meta1, meta2) == ({"index": 0, "amount": 2}, {"index": 2, "amount": 2})
    assert out.values == [[a1, 0], [a1, 1], [a2, 2], [a2, 3]]
    again = Collect()
    emitter.emit_partition_batch(TransactionAttempt(2, 5), again, 0, meta2)
    assert again.values == [[TransactionAttempt(2, 5), 2], [TransactionAttempt(2, 5), 3]]
    end = emitter.emit_partition_batch_new(a2, Collect(), 1, None)
    assert end == {"index": 0, "amount": 1}
    assert emitter.emit_partition_batch_new(a2, Collect(), 1, end) == {"index": 1, "amount": 0}


def test_coordinator_is_ready_until_everything_was_emitted() -> None:
    data = {0: [["x"], ["y"]]}
    spout = MemoryTransactionalSpout(data, ["w"], 5)
    coordinator = spout.get_coordinator({}, None)  # type: ignore[arg-type]
    emitter = spout.get_emitter({}, None)  # type: ignore[arg-type]
    assert coordinator.num_partitions() == 1 and coordinator.is_ready()
    emitter.emit_partition_batch_new(TransactionAttempt(1, 1), Collect(), 0, None)
    assert not coordinator.is_ready()
    data[0].append(["z"])  # lists may grow while running
    assert coordinator.is_ready()


def test_declares_the_attempt_field_first() -> None:
    from engine.topology import OutputFieldsDeclarer

    declarer = OutputFieldsDeclarer()
    MemoryTransactionalSpout({}, ["word"], 1).declare_output_fields(declarer)
    assert list(declarer.streams["default"].fields) == ["tx", "word"]
