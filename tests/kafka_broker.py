"""The test broker: re-exported from ``connectors.kafka.testing_broker`` so the benchmarks
and the pytest fixture start Tansu the same way."""

from connectors.kafka.testing_broker import BrokerStartError, TestingBroker, broker_binary

__all__ = ["BrokerStartError", "TestingBroker", "broker_binary"]
