"""Record decoding and encoding, and the spout's and bolt's option handling (no broker)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import orjson
import pytest

from connectors.kafka import KafkaBolt, KafkaSpout
from connectors.kafka.codec import DecodeError, Decoder, encode_key, encode_value
from connectors.kafka.spout import consumer_config, producer_config


def record(key: bytes | None, value: bytes | None) -> SimpleNamespace:
    return SimpleNamespace(topic="t", partition=2, offset=7, key=key, value=value,
                           timestamp=123, headers=[("h", b"1")])


def test_decoder_formats_and_fields() -> None:
    assert Decoder(("key", "value"), "str")(record(b"k", b"v")) == ["k", "v"]
    assert Decoder(("value",), "json")(record(None, b'{"a": [1]}')) == [{"a": [1]}]
    assert Decoder(("key", "value"), "bytes")(record(b"\xff", b"\x00")) == [b"\xff", b"\x00"]
    every = Decoder(("topic", "partition", "offset", "timestamp", "headers"), "str")
    assert every(record(None, None)) == ["t", 2, 7, 123, [("h", b"1")]]
    assert Decoder(("key", "value"), "json")(record(None, None)) == [None, None]


@pytest.mark.parametrize(("fmt", "key", "value", "reason"), [
    ("json", b"k", b"{oops", r"^value \(json\) is not valid JSON: "),
    ("str", b"k", b"\xff", r"^value \(str\) is not valid UTF-8: "),
    ("json", b"\xff", b"{}", r"^key is not valid UTF-8: "),
])
def test_decoder_reasons(fmt: str, key: bytes, value: bytes, reason: str) -> None:
    with pytest.raises(DecodeError, match=reason):
        Decoder(("key", "value"), fmt)(record(key, value))


def test_decoder_rejects_unknown_fields_and_formats() -> None:
    with pytest.raises(ValueError, match=r"^fields must be a non-empty list of \['topic', "):
        Decoder(("key", "velue"), "str")
    with pytest.raises(ValueError, match=r"^value_format must be one of \['str', 'json', "
                                         r"'bytes'\], got 'avro'$"):
        Decoder(("value",), "avro")


def test_encoding() -> None:
    assert encode_key(None) is None
    assert encode_key("wörd") == "wörd".encode()
    assert encode_key(42) == b"42"
    assert encode_value({"n": 1}, "json") == orjson.dumps({"n": 1})
    assert encode_value(7, "str") == b"7"
    assert encode_value(b"raw", "str") == b"raw"
    assert encode_value(None, "bytes") is None
    with pytest.raises(TypeError, match=r"^value_format 'bytes' needs bytes, got str$"):
        encode_value("text", "bytes")


def test_consumer_options_override_defaults_and_reach_the_failed_producer() -> None:
    options = consumer_config({"auto_offset_reset": "latest", "session_timeout_ms": 2000,
                               "security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN",
                               "sasl_plain_username": "u", "sasl_plain_password": "p"})
    assert options["auto_offset_reset"] == "latest"
    assert options["enable_auto_commit"] is False
    assert options["fetch_max_wait_ms"] == 100  # a resumed partition waits no longer
    assert consumer_config({"fetch_max_wait_ms": 500})["fetch_max_wait_ms"] == 500
    assert producer_config(options) == {
        "acks": "all", "security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN",
        "sasl_plain_username": "u", "sasl_plain_password": "p"}


@pytest.mark.parametrize("option", ["enable_auto_commit", "value_deserializer"])
def test_options_that_break_the_guarantee_are_refused(option: str) -> None:
    with pytest.raises(ValueError, match=rf"^KafkaSpout: consumer option '{option}' is not "):
        KafkaSpout("t", "localhost:9092", "g", **{option: True})


def test_spout_and_bolt_argument_errors() -> None:
    with pytest.raises(ValueError, match=r"^KafkaSpout: topics must be a topic name or a "):
        KafkaSpout([], "localhost:9092", "g")
    with pytest.raises(ValueError, match=r"^retry_backoff_secs must be"):
        KafkaSpout("t", "localhost:9092", "g", retry_backoff_secs=(5.0, 1.0))
    with pytest.raises(ValueError, match=r"^value_format must be one of"):
        KafkaBolt("t", "localhost:9092", value_format="xml")
    with pytest.raises(ValueError, match=r"^KafkaSpout: retry_backoff_secs must be a number "
                                         r"of seconds .* or a pair \(initial, maximum\), "
                                         r"got \(1, 2, 3\)$"):
        KafkaSpout("t", "localhost:9092", "g", retry_backoff_secs=(1, 2, 3))
    with pytest.raises(ValueError, match=r"^KafkaSpout: retry_backoff_secs .* got '0.1'$"):
        KafkaSpout("t", "localhost:9092", "g", retry_backoff_secs="0.1")
    spout = KafkaSpout(["a", "b"], "localhost:9092", "g", fields=("value",),
                       session_timeout_ms=2000)
    assert spout.topics == ["a", "b"]
    assert spout.consumer_options["session_timeout_ms"] == 2000


def test_undecoded_fields_fast_path_matches() -> None:
    rec = record(b"k", b"v")
    assert Decoder(("value",), "bytes")(rec) == [b"v"]
    assert Decoder(("partition", "offset", "key"), "bytes")(rec) == [2, 7, b"k"]
    assert Decoder(("offset",), "json")(rec) == [7]


class FakeTuple:
    """Just what KafkaBolt reads from a tuple."""

    source_component = "count"

    def __init__(self, fields: list[str], values: list[object]) -> None:
        self.fields, self.values = fields, values

    def __getitem__(self, key: int | str) -> object:
        return self.values[key if isinstance(key, int) else self.fields.index(key)]

    def __len__(self) -> int:
        return len(self.values)


def test_bolt_value_without_value_field() -> None:
    tup = FakeTuple(["word", "count"], ["cow", 3])
    assert KafkaBolt("t", "b:9092", value_format="json")._value(tup) == {"word": "cow",
                                                                        "count": 3}
    assert KafkaBolt("t", "b:9092")._value(FakeTuple(["word"], ["cow"])) == "cow"
    assert KafkaBolt("t", "b:9092", value_field="count")._value(tup) == 3
    with pytest.raises(ValueError, match=r"^KafkaBolt: value_field is not set and tuples from "
                                         r"'count' have fields \['word', 'count'\]; "):
        KafkaBolt("t", "b:9092")._value(tup)


@pytest.mark.parametrize(("fields", "value_format"), [
    (("key", "value"), "bytes"), (("value",), "bytes"), (("key", "value"), "json"),
    (("offset", "value", "headers"), "str")])
def test_decoding_a_batch_equals_decoding_each_record(fields: tuple[str, ...],
                                                      value_format: str) -> None:
    decoder = Decoder(fields, value_format)
    records = [SimpleNamespace(topic="t", partition=0, offset=i, key=b"k%d" % i,
                               value=orjson.dumps({"n": i}), timestamp=i, headers=[])
               for i in range(5)]
    assert decoder.many(records) == [decoder(r) for r in records]
    bad = [*records, SimpleNamespace(**{**vars(records[0]), "value": b"\xff{"})]
    if value_format != "bytes":
        with pytest.raises(DecodeError):
            decoder.many(bad)


@pytest.mark.parametrize(("given", "initial", "maximum"), [
    (0.1, 0.1, 30.0), (2, 2.0, 30.0), (45.0, 45.0, 45.0), ((0.05, 0.2), 0.05, 0.2),
    ([1, 4], 1.0, 4.0)])
def test_retry_backoff_is_a_number_or_a_pair(given: object, initial: float,
                                             maximum: float) -> None:
    spout = KafkaSpout("t", "localhost:9092", "g", retry_backoff_secs=given, max_retries=2)
    assert (spout.backoff.initial, spout.backoff.maximum) == (initial, maximum)
    assert spout.backoff.max_retries == 2


def test_a_kafka_bolt_takes_whole_batches_unless_a_subclass_overrides_execute() -> None:
    """The engine hands the Kafka bolt whole queue batches (also behind a checkpoint
    forwarder); a subclass with its own ``execute`` keeps it, run per tuple."""
    from engine.state.executor import BatchCheckpointForwarder, wrap_for_checkpoints

    class Custom(KafkaBolt):
        async def execute(self, tup: Any) -> None:
            await super().execute(tup)

    plain, custom = KafkaBolt("t", "h:1"), Custom("t", "h:1")
    assert plain.executes_batches is True and custom.executes_batches is False
    assert isinstance(wrap_for_checkpoints(plain, stateful=False), BatchCheckpointForwarder)
    assert not isinstance(wrap_for_checkpoints(custom, stateful=False),
                          BatchCheckpointForwarder)
