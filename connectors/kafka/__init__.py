"""Kafka spout and bolt on aiokafka with storm-kafka-client semantics."""
