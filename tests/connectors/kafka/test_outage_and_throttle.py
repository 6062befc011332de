"""Outage lines (one WARNING, one INFO with the length), stall detection, log throttling,
and the client options every Kafka client is built from."""

from __future__ import annotations

import logging
import ssl

import pytest

from connectors.kafka import client_options
from connectors.kafka.broker_watch import FetchAnswers
from connectors.kafka.kafka_errors import describe, is_outage, is_permanent
from connectors.kafka.outage import Outage, StallWatch, servers_text
from connectors.kafka.throttle import LogThrottle, throttle_aiokafka

log = logging.getLogger("tests.outage")


def test_an_outage_is_one_warning_and_one_info_with_its_length(caplog) -> None:
    outage = Outage("KafkaBolt 'out' task 3", log)
    caplog.set_level(logging.INFO, logger="tests.outage")
    outage.up(0.0)  # reachable: nothing to say
    for t in range(150):
        outage.down(10.0 + t, "KafkaConnectionError: Connection refused")
    assert outage.down_since == 10.0
    outage.up(160.5)
    outage.up(161.0)
    lines = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert lines == [
        ("WARNING", "KafkaBolt 'out' task 3: Kafka broker unreachable (KafkaConnectionError: "
                    "Connection refused); retrying quietly until it answers"),
        ("INFO", "KafkaBolt 'out' task 3: Kafka broker reachable again after an outage of "
                 "150.5 s (150 errors meanwhile)"),
    ]
    assert outage.down_since is None


def test_an_outage_line_names_the_bootstrap_servers_when_given(caplog) -> None:
    outage = Outage("KafkaSpout 'kafka' task 1", log, servers_text(["a:9092", "b:9092"]))
    caplog.set_level(logging.INFO, logger="tests.outage")
    outage.down(1.0, "no fetch answered for 15 s")
    assert [r.getMessage() for r in caplog.records] == [
        "KafkaSpout 'kafka' task 1: Kafka broker unreachable (no fetch answered for 15 s; "
        "bootstrap servers a:9092,b:9092); retrying quietly until it answers"]


def test_fetch_answers_move_only_when_a_known_timestamp_changes() -> None:
    answers = FetchAnswers()
    assert not answers.moved({"p0": None})  # assigned, never fetched
    assert answers.moved({"p0": 100})
    assert not answers.moved({"p0": 100, "p1": None})  # paused or new: nothing answered
    assert answers.moved({"p0": 100, "p1": 150})
    assert not answers.moved({"p1": 150})  # p0 revoked
    assert answers.moved({"p1": 151})


def test_stall_watch_counts_time_without_progress_only_while_waiting() -> None:
    watch = StallWatch()
    assert watch.check(1, True, 0.0) == 0.0
    assert watch.check(1, True, 4.0) == 4.0
    assert watch.check(2, True, 5.0) == 0.0  # progress
    assert watch.check(2, False, 9.0) == 0.0  # nothing waits: not a stall
    assert watch.check(2, True, 10.0) == 1.0  # waiting since the last look, at most
    assert watch.check(2, True, 25.0) == 16.0


def test_log_throttle_lets_one_through_per_interval_and_counts_the_rest() -> None:
    t = LogThrottle(60.0)
    assert t.allow("a", 0.0) == (True, 0)
    assert [t.allow("a", s)[0] for s in (1.0, 30.0, 59.9)] == [False, False, False]
    assert t.allow("b", 1.0) == (True, 0)  # another kind has its own budget
    assert t.allow("a", 60.0) == (True, 3)
    with pytest.raises(ValueError):
        LogThrottle(-1)


def test_aiokafka_loggers_are_throttled_per_message(caplog) -> None:
    throttle_aiokafka(60.0)
    caplog.set_level(logging.INFO)
    conn = logging.getLogger("aiokafka.conn")
    client = logging.getLogger("aiokafka")
    for _ in range(500):
        conn.error("Unable connect to node with id %s: %s", 1, "refused")
        client.error("Unable connect to %r", "127.0.0.1:9")
    conn.critical("always through")
    messages = [r.getMessage() for r in caplog.records if r.name.startswith("aiokafka")]
    assert messages == ["Unable connect to node with id 1: refused",
                        "Unable connect to '127.0.0.1:9'", "always through"]


def test_errors_are_told_apart_and_described_once() -> None:
    from aiokafka.errors import (
        InvalidTopicError,
        KafkaConnectionError,
        KafkaTimeoutError,
        MessageSizeTooLargeError,
        TopicAuthorizationFailedError,
        UnknownTopicOrPartitionError,
    )
    assert describe(ValueError("boom 42")) == "ValueError: boom 42"
    assert describe(MessageSizeTooLargeError("too big")) == "MessageSizeTooLargeError: too big"
    assert describe(KafkaConnectionError("refused")) == "KafkaConnectionError: refused"
    assert all(is_outage(e) for e in (KafkaConnectionError(), KafkaTimeoutError()))
    assert all(is_permanent(e) for e in (MessageSizeTooLargeError(), InvalidTopicError(),
                                         TopicAuthorizationFailedError()))
    assert not any(is_permanent(e) for e in (KafkaConnectionError(), KafkaTimeoutError(),
                                             UnknownTopicOrPartitionError()))


def test_client_options_share_connection_and_security_settings() -> None:
    options = {"security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN",
               "sasl_plain_username": "u", "sasl_plain_password": "p", "client_id": "c",
               "session_timeout_ms": 2000, "max_poll_records": 5}
    assert client_options.shared(options) == {
        "security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN",
        "sasl_plain_username": "u", "sasl_plain_password": "p", "client_id": "c"}
    built = client_options.build({"linger_ms": 1}, {"acks": "all", "linger_ms": 5})
    assert built == {"acks": "all", "linger_ms": 1}


def test_ssl_file_options_become_an_ssl_context() -> None:
    cafile = ssl.get_default_verify_paths().cafile
    if cafile is None:
        pytest.skip("this machine has no default CA bundle file")
    built = client_options.build({"ssl_cafile": cafile})
    assert isinstance(built["ssl_context"], ssl.SSLContext)
    assert built["security_protocol"] == "SSL" and "ssl_cafile" not in built
    with pytest.raises(ValueError, match="either ssl_context or"):
        client_options.build({"ssl_cafile": cafile, "ssl_context": built["ssl_context"]},
                             who="KafkaSpout")
