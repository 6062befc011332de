"""The replay job without Spark: the same reading, parsing, de-duplication, tally and
writing, in this process, for runs small enough that starting Spark would cost more than
the work (``options.IN_PROCESS_BELOW``).

Each planned range is read with ``kafka_io.fetch_range`` and parsed with
``parse.parse_fetched``, as the Spark source does in its tasks; ``fate.fated`` decides
each row's fate by the Spark job's rules; ``sink_rows.tally_batch`` tallies the rows and
``kafka_io.write_rows`` produces the replayed ones, as the Spark sink does. So a run gives
the same summary and writes the same records either way.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pyarrow as pa

from connectors.spark.fate import fated
from connectors.spark.kafka_io import Rows, fetch_range, gc_paused, write_rows
from connectors.spark.offsets import OffsetRange
from connectors.spark.options import ReplayOptions
from connectors.spark.parse import PARSED_SCHEMA, parse_fetched
from connectors.spark.progress import Progress
from connectors.spark.sink_rows import SINK_COLUMNS, tally_batch
from connectors.spark.summary import ReplaySummary
from connectors.spark.tally import Tally

__all__ = ["replay_in_process"]

# Rows handed to the writer at a time (at most a second's worth under a rate limit): small
# enough for the progress line to move.
_WRITE_CHUNK = 500


def _read(options: ReplayOptions, ranges: list[OffsetRange], progress: Progress) -> pa.Table:
    """Every record of ``ranges``, parsed (``PARSED_SCHEMA``)."""
    progress.stage = "reading the failed topic"
    batches: list[pa.RecordBatch] = []
    for rng in ranges:
        for records in fetch_range(options.bootstrap_servers, rng, client=options.client):
            with gc_paused():
                batches.append(parse_fetched(records, rng.partition))
            progress.read = (progress.read or 0) + len(records)
    return pa.Table.from_batches(batches, schema=PARSED_SCHEMA)


def _counted(rows: Iterable[Rows], progress: Progress) -> Iterator[Rows]:
    for chunk in rows:
        yield chunk
        progress.written += len(chunk.values)


def replay_in_process(options: ReplayOptions, ranges: list[OffsetRange],
                      summary: ReplaySummary, progress: Progress) -> None:
    """Read, de-duplicate, tally and (unless a dry run) write ``ranges``; fill ``summary``.

    Returns once the broker confirmed every write; commits nothing (the caller does).
    """
    table = fated(_read(options, ranges, progress), options).select(list(SINK_COLUMNS))
    progress.stage = "writing" if not options.dry_run else "counting"
    tally = Tally()
    rate = options.max_records_per_sec
    chunk = _WRITE_CHUNK if rate is None else max(1, min(_WRITE_CHUNK, int(rate)))
    rows = (tally_batch(batch, tally, options.dry_run)
            for batch in table.to_batches(max_chunksize=chunk))
    if options.dry_run:
        for _ in rows:
            pass
    else:
        write_rows(options.bootstrap_servers, _counted(rows, progress),
                   producer_options=options.client,
                   max_records_per_sec=options.max_records_per_sec)
    tally.fill(summary)
