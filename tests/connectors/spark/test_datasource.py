"""The Kafka data source on a real session: planned input partitions, reads, writes."""

from __future__ import annotations

import asyncio

import pytest

from connectors.spark.datasource import FORMAT
from tests.connectors.spark.helpers import produce, read_all, unique


def test_reads_every_partition_in_ranges_and_writes_back(kafka_broker, spark) -> None:
    source, sink = unique("ds-in"), unique("ds-out")
    kafka_broker.create_topic_sync(source, partitions=2)
    kafka_broker.create_topic_sync(sink)
    asyncio.run(produce(kafka_broker.bootstrap, source, [b"a%d" % i for i in range(10)], 0))
    asyncio.run(produce(kafka_broker.bootstrap, source, [b"b%d" % i for i in range(3)], 1))

    frame = (spark.read.format(FORMAT).option("kafka.bootstrap.servers", kafka_broker.bootstrap)
             .option("topic", source).option("maxOffsetsPerTask", "4").load())
    assert frame.rdd.getNumPartitions() == 4  # offsets 0-4, 4-8, 8-10 of p0; 0-3 of p1
    rows = frame.select("partition", "offset", "value").collect()
    assert sorted((r.partition, r.offset, r.value) for r in rows) == (
        [(0, i, b"a%d" % i) for i in range(10)] + [(1, i, b"b%d" % i) for i in range(3)])

    (frame.selectExpr("key", "value", "array(named_struct('key', 'from', "
                      "'value', cast(topic as binary))) AS headers")
     .write.format(FORMAT).mode("append")
     .option("kafka.bootstrap.servers", kafka_broker.bootstrap).option("topic", sink).save())
    written = asyncio.run(read_all(kafka_broker.bootstrap, sink))
    assert sorted(r.value for r in written) == sorted(r.value for r in rows)
    assert {tuple(r.headers) for r in written} == {(("from", source.encode()),)}


def test_overwrite_is_refused(kafka_broker, spark) -> None:
    frame = spark.createDataFrame([(b"v",)], "value BINARY")
    with pytest.raises(Exception, match=r"only appends; use mode\('append'\)"):
        (frame.write.format(FORMAT).mode("overwrite")
         .option("kafka.bootstrap.servers", kafka_broker.bootstrap).option("topic", "x").save())
