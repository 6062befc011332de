"""Command line of the replay job: ``python scripts/replay_failed.py --help``.

Exit status: 0 after a run (dry or not), 2 for bad arguments, an unreachable broker or a
missing failed topic (one line on stderr, before Spark starts), 1 if the job failed.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import re
import sys
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta

from connectors.spark.offsets import BrokerUnreachable, TopicNotFound

__all__ = ["main", "parse_args", "parse_since"]

_PROG = "replay_failed"
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)([smhd])$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_since(text: str, now: datetime | None = None) -> int:
    """Epoch milliseconds for ``--since``: a duration back from ``now`` (``90m``, ``2h``,
    ``7d``), an ISO-8601 date or time (UTC unless it names a zone), or epoch ms."""
    now = now or datetime.now(UTC)
    if text.isdigit():
        return int(text)
    match = _DURATION.match(text)
    if match:
        seconds = float(match[1]) * _UNIT_SECONDS[match[2]]
        return int((now - timedelta(seconds=seconds)).timestamp() * 1000)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--since {text!r}: expected a duration like 90m, 2h or 7d, an ISO-8601 time "
            "like 2026-11-22T05:00 or epoch milliseconds") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=_PROG, description="Replay records from a failed topic back onto Kafka "
        "(a PySpark batch job). Progress is kept per --group-id: a re-run replays only "
        "failed records that arrived since the last run.")
    p.add_argument("--bootstrap-servers", required=True, metavar="HOST:PORT[,...]")
    p.add_argument("--failed-topic", required=True, metavar="TOPIC")
    p.add_argument("--target-topic", metavar="TOPIC",
                   help="write every record here (default: the record's own topic)")
    p.add_argument("--group-id", default="replay-failed", metavar="GROUP",
                   help="consumer group holding this job's progress (default: %(default)s)")
    p.add_argument("--master", metavar="URL",
                   help="Spark master (default: local[*], or spark-submit's own)")
    p.add_argument("--dry-run", action="store_true",
                   help="print what would be replayed; write and commit nothing")
    p.add_argument("--reason", action="append", default=[], metavar="TEXT",
                   help="only records whose reason contains TEXT (repeatable: any of them); "
                   "records filtered out still count as handled for --group-id")
    p.add_argument("--since", type=parse_since, metavar="WHEN",
                   help="only records that failed at or after WHEN: 90m, 2h, 7d, an "
                   "ISO-8601 time (UTC by default) or epoch ms")
    p.add_argument("--connect-timeout", type=float, default=5.0, metavar="SECS",
                   help="give up on an unreachable broker after SECS (default: %(default)s)")
    p.add_argument("--max-offsets-per-task", type=int, default=50_000, metavar="N",
                   help="largest offset range one Spark task reads (default: %(default)s)")
    return p


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The parsed command line; exits with status 2 and usage on bad arguments."""
    return _parser().parse_args(argv)


@contextlib.contextmanager
def _quiet(logger_name: str) -> Iterator[None]:
    # aiokafka logs every refused connection; the one-line error below says it all.
    logger = logging.getLogger(logger_name)
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the job from the command line, print its summary, return the exit status."""
    args = parse_args(argv)
    if args.max_offsets_per_task < 1:
        print(f"{_PROG}: error: --max-offsets-per-task must be at least 1", file=sys.stderr)
        return 2
    # Imported here so that --help and argument errors do not wait for pyspark.
    from connectors.spark.replay import ReplayOptions, run_replay
    from connectors.spark.summary import format_summary

    options = ReplayOptions(
        bootstrap_servers=args.bootstrap_servers, failed_topic=args.failed_topic,
        target_topic=args.target_topic, group_id=args.group_id, master=args.master,
        dry_run=args.dry_run, reasons=tuple(args.reason), since_ms=args.since,
        connect_timeout_s=args.connect_timeout,
        max_offsets_per_task=args.max_offsets_per_task)
    try:
        with _quiet("aiokafka"):
            summary = run_replay(options)
    except (BrokerUnreachable, TopicNotFound) as exc:
        print(f"{_PROG}: error: {exc}", file=sys.stderr)
        return 2
    print(format_summary(summary))
    return 0
