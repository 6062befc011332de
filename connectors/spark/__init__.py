"""The PySpark side of failure replay (docs/spark-replay.md).

    offsets.py     offset ranges: group progress to fetch high watermark; commit (no Spark)
    kafka_io.py    blocking aiokafka reads and writes as Arrow batches, for Spark tasks
    parse.py       failed-topic records to typed columns; malformed ones kept with an error
    datasource.py  Python Data Source API: ``stormloop_kafka`` (read, write) and
                   ``stormloop_failed_records`` (read, parsed)
    session.py     a SparkSession whose workers run this interpreter and import this code
    replay.py      the job: parse, de-duplicate, filter, write back, commit progress
    summary.py     what a run did, as data and as the printed table
    cli.py         ``scripts/replay_failed.py``'s command line
"""
