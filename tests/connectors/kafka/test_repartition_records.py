"""Repartition records without a broker: keys, values, partitions and decoding."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connectors.kafka import KafkaSpout
from connectors.kafka.codec import DecodeError, encode_key
from connectors.kafka.keys import StrKeys
from connectors.kafka.repartition import (
    ID_SPAN,
    READER_BUFFER_RECORDS,
    KeyPartitions,
    RepartitionSpout,
    hop,
    record_key,
    topic_name,
)
from engine.murmur2 import default_partition
from tests.connectors.kafka.carried import carried, one_row, packed, shape

msgpack = msgspec.msgpack.encode


def spout() -> KafkaSpout:
    return KafkaSpout("words", "127.0.0.1:9", "wc", session_timeout_ms=2000)


def test_one_key_field_is_its_text_and_a_none_key_still_has_a_partition() -> None:
    writer, reader = hop(spout(), "count", ("word",), ("word", "n"))
    assert writer.topic == reader.topics[0] == topic_name("wc", "count") == "wc-count-repartition"
    key, value = writer._record(SimpleNamespace(values=["kafka", 3]))
    assert (key, reader.decoder(packed(value))) == (b"kafka", [["kafka", 3]])
    assert writer._record(SimpleNamespace(values=[None, 1]))[0] == b"null"


def test_a_remembered_key_is_the_key_the_grouping_value_makes() -> None:
    """The writer remembers a str grouping value's key bytes; a value equal to it but of
    another type (1, 1.0, True) keeps its own key."""
    writer, _ = hop(spout(), "count", ("k",), ("k", "n"))
    for value in ("kafka", "ünï", "kafka", "1", 1, 1.0, True, "1"):
        key = writer._record(SimpleNamespace(values=[value, 0]))[0]
        assert key == record_key([value], (0,)) == encode_key(value)


def test_several_key_fields_are_a_json_array_in_grouping_order() -> None:
    writer, _ = hop(spout(), "count", ("b", "a"), ("a", "b", "c"))
    assert writer._record(SimpleNamespace(values=[1, "x", 2.5]))[0] == msgpack(["x", 1])


def test_values_keep_bytes_and_nesting() -> None:
    writer, reader = hop(spout(), "count", ("k",), ("k", "v"))
    key, value = writer._record(SimpleNamespace(values=[b"\xff", (1, {"a": None})]))
    assert key == b"\xff"
    decoded, = reader.decoder(packed(value))
    assert decoded == [b"\xff", (1, {"a": None})] and type(decoded[1]) is tuple
    with pytest.raises(TypeError):
        writer._record(SimpleNamespace(values=[1, object()]))


def test_reader_keeps_the_spouts_options_and_reads_from_the_start() -> None:
    upstream = KafkaSpout("words", "127.0.0.1:9", "wc", failed_topic="failed",
                          max_retries=5, auto_offset_reset="latest", session_timeout_ms=2000)
    reader = RepartitionSpout("wc-count-repartition", upstream, ("word", "n"))
    assert (reader.group_id, reader.failed_topic, reader.backoff.max_retries) == (
        "wc", "failed", 5)
    assert reader.consumer_options["auto_offset_reset"] == "earliest"
    assert reader.consumer_options["session_timeout_ms"] == 2000
    assert upstream.consumer_options["auto_offset_reset"] == "latest"
    assert reader.input_topics == ["words"] and upstream.topics == ["words"]
    # Records of packed rows wait decoded: fewer of them than the spout's 10,000 records.
    assert reader.buffer_size == READER_BUFFER_RECORDS < upstream.buffer_size
    assert reader.decoder(one_row(msgpack(["a", 1]))) == [["a", 1]]
    assert reader.decoder.many([one_row(msgpack(["a", 1]))]) == [[["a", 1]]]
    assert reader.decoder(packed(msgpack(["a", 1]), msgpack(["b", 2]))) == [["a", 1], ["b", 2]]
    for bad in (msgpack([1]), msgpack({}), b"\xc1", None):
        for record in (one_row(bad), packed(msgpack(["a", 1]), bad)):
            with pytest.raises(DecodeError):
                reader.decoder(record)
            with pytest.raises(DecodeError):
                reader.decoder.many([record])


def test_key_partitions_are_kafkas_default_ones() -> None:
    partitioner = KeyPartitions(size=4)
    for n in (1, 3, 7, 3):
        parts = list(range(n))
        for i in range(50):
            key = f"k{i}".encode()
            assert partitioner(key, parts, parts) == default_partition(key, parts, parts)


def test_str_keys_remember_partition_and_key_bytes_while_the_partition_count_stays() -> None:
    asked: list[bytes] = []

    def partition_of(key: bytes) -> int:
        asked.append(key)
        return len(key)

    keys = StrKeys(size=2)
    keys.recount(4)
    assert keys.learn("héllo", partition_of) == (6, "héllo".encode())
    assert keys.known == {"héllo": (6, "héllo".encode())}
    keys.recount(4)
    assert "héllo" in keys.known  # same count: remembered
    keys.learn("a", partition_of)
    keys.learn("b", partition_of)  # full at two: starts again
    assert keys.known == {"b": (1, b"b")} and asked == ["héllo".encode(), b"a", b"b"]
    keys.recount(8)
    assert keys.known == {}


def test_the_bolt_behind_the_hop_finds_a_str_keys_partition_as_the_writer_does() -> None:
    writer, reader = hop(spout(), "count", ("word",), ("word", "n"))
    changelog = reader.changelog_input("count", ("word",))
    changelog.partitions = parts = list(range(7))
    for word in ("kafka", "storm", "kafka", "é"):
        key, _ = writer._record(SimpleNamespace(values=[word, 1]))
        assert changelog.partition_of([word, 1]) == KeyPartitions()(key, parts, parts)


def test_a_reader_for_a_stateful_window_puts_record_offsets_in_its_message_id_field() -> None:
    _, reader = hop(spout(), "sum", ("word",), ("word", "id", "n"))
    ids = reader.with_offsets_in("id")
    records = [one_row(msgpack(["a", 0, 5]), offset=41),
               one_row(msgpack(["b", 0, 6]), offset=42)]
    assert ids.decoder(records[0]) == [["a", 41, 5]]
    assert ids.decoder.many(records) == [[["a", 41, 5]], [["b", 42, 6]]]
    # The reader of any other bolt, and the one it was made from, decode records as written.
    assert type(reader.decoder).__name__ == "_Rows"
    assert reader.decoder.many(records) == [[["a", 0, 5]], [["b", 0, 6]]]


def test_the_rows_of_a_packed_record_have_message_ids_that_grow_past_earlier_records() -> None:
    """Ids grow per partition across one-row records written before packing and packed
    ones after them, and a record read again gives its rows the same ids."""
    _, reader = hop(spout(), "sum", ("word",), ("word", "id", "n"))
    ids = reader.with_offsets_in("id")
    rows = [msgpack([w, 0, i]) for i, w in enumerate("abc")]
    records = [one_row(msgpack(["z", 0, 9]), offset=6), packed(*rows, offset=7),
               packed(*rows[:1], offset=8)]
    got = [row[1] for rows_ in ids.decoder.many(records) for row in rows_]
    assert got == [6, 7 * ID_SPAN, 7 * ID_SPAN + 1, 7 * ID_SPAN + 2, 8 * ID_SPAN]
    assert got == sorted(got) and [r[1] for r in ids.decoder(records[1])] == got[1:4]
    assert (ids.topics, ids.group_id, ids.fields) == (reader.topics, "wc", reader.fields)


def test_a_tuple_key_reaches_the_partition_the_writer_chose() -> None:
    """One grouping field holding a tuple: the reader's decoded values key the stateful
    bolt's partition as the writer keyed the record."""
    writer, reader = hop(spout(), "count", ("k",), ("n", "k"))
    changelog = reader.changelog_input("count", ("k",))
    changelog.partitions = parts = list(range(12))
    key, value = writer._record(SimpleNamespace(values=[0, (1, 2)]))
    decoded, = reader.decoder(packed(value))
    assert decoded == [0, (1, 2)]
    assert changelog.partition_of(decoded) == KeyPartitions()(key, parts, parts)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(row=st.lists(carried, min_size=1, max_size=3), data=st.data())
def test_every_carried_value_comes_back_as_it_went_with_the_writers_key(
        row: list[Any], data: st.DataObject) -> None:
    """Whatever the hop carries decodes to the same types and values, and the reader's
    decoded values give the key bytes and partition the writer gave the record."""
    fields = tuple(f"f{i}" for i in range(len(row)))
    keys = tuple(data.draw(st.lists(st.sampled_from(fields), min_size=1, unique=True)))
    writer, reader = hop(spout(), "count", keys, fields)
    changelog = reader.changelog_input("count", keys)
    changelog.partitions = parts = list(range(12))
    key, value = writer._record(SimpleNamespace(values=row))
    decoded, = reader.decoder(packed(value))
    assert shape(decoded) == shape(row)
    at = [fields.index(k) for k in keys]
    assert record_key(decoded, at) == key == record_key(row, at)
    assert changelog.partition_of(decoded) == KeyPartitions()(key, parts, parts)


@pytest.mark.parametrize("value", [
    {"b", "a", "c", "kafka", "storm"}, frozenset({3, 10, 2}), [{"x", "y"}, (1, {2, 9})],
])
def test_equal_sets_have_one_key_however_they_were_built(value: Any) -> None:
    """A set's key does not depend on its order in memory (insertion history, table
    size, a process's string hashes)."""
    def rebuilt(v: Any) -> Any:
        if type(v) in (set, frozenset):
            big = type(v)([*v, *range(1000)]) - type(v)(range(1000))  # a larger table
            return big if big == v else type(v)(reversed(list(v)))
        if type(v) in (list, tuple):
            return type(v)(rebuilt(x) for x in v)
        return v
    other = rebuilt(value)
    assert other == value
    for at in ((0,), (0, 1)):
        assert record_key([value, 1], at) == record_key([other, 1], at)


def test_a_value_the_hop_cannot_carry_fails_its_tuple_alone_with_the_reason() -> None:
    writer, _ = hop(spout(), "count", ("k",), ("k", "v"))
    sent: list[Any] = []
    failed: list[tuple[Any, Any]] = []
    writer._sender = SimpleNamespace(add_nowait=lambda k, v, t: sent.append(t) or True,
                                     add_row=lambda p, k, v, t: sent.append(t),
                                     partitions=[0, 1], partition_of=lambda key: 0,
                                     wake=lambda: True)
    writer._sent = 0
    writer._collector = SimpleNamespace(component="__count-repartition-writer",
                                        fail_with=lambda t, r: failed.append((t, r)),
                                        report_error=lambda exc: None)
    good, bad = (SimpleNamespace(values=v, is_tick=lambda: False)
                 for v in (["a", {1, 2}], ["b", bytearray(b"x")]))
    writer.execute_batch([good, bad])
    assert sent == [good] and [t for t, _ in failed] == [bad]
    assert failed[0][1].message.startswith(
        "TypeError: field 'v' holds a value of type bytearray, which cannot cross")
