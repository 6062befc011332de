"""Command line of the replay job: ``stormloop-replay --help`` (installed),
``stormloop replay --help`` or ``python scripts/replay_failed.py --help`` (from a
checkout); messages and the usage line carry the name it was started by.

Exit status: 0 after a run (dry or not), 2 for bad arguments, no Java (when Spark is to
start), an unreachable broker or a missing failed topic (one line on stderr, before Spark
starts), 130 after Ctrl-C (one line, no traceback), 1 if the job failed. Standard output
carries the summary alone: while the job runs, whatever Spark and its JVM print there is
sent to standard error instead, and so is a progress line every few seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import re
import sys
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta

from connectors.spark.job import JavaNotFound, find_java, run_replay
from connectors.spark.offsets import BrokerUnreachable, TopicNotFound
from connectors.spark.options import IN_PROCESS_BELOW, ReplayOptions
from connectors.spark.progress import Progress
from connectors.spark.summary import format_summary

__all__ = ["find_java", "main", "parse_args", "parse_since", "run"]

_INTERRUPTED = 130  # 128 + SIGINT, as shells report it
_PROGRESS_EVERY_SECS = 5.0
_SPARK_SUBMIT_ENV = "PYSPARK_GATEWAY_PORT"  # set for a driver that spark-submit started
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


def _parser(prog: str | None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog, description="Replay records from a failed topic back onto Kafka "
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
    p.add_argument("--max-attempts", type=int, default=5, metavar="N",
                   help="skip (and count) records that failed more than N times in all "
                   "(default: %(default)s)")
    p.add_argument("--max-records-per-sec", type=float, metavar="RATE",
                   help="write at most RATE records per second in all (default: no limit)")
    _engine_arguments(p)
    sec = p.add_argument_group("security (the same options as the spout's)")
    sec.add_argument("--security-protocol", choices=("PLAINTEXT", "SSL", "SASL_PLAINTEXT",
                                                   "SASL_SSL"))
    sec.add_argument("--sasl-mechanism", choices=("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"))
    sec.add_argument("--sasl-username", metavar="USER")
    sec.add_argument("--sasl-password-env", metavar="VAR", default="STORMLOOP_SASL_PASSWORD",
                   help="environment variable holding the SASL password (default: "
                   "%(default)s); never on the command line")
    sec.add_argument("--ssl-cafile", metavar="PEM", help="CA bundle to verify the brokers")
    sec.add_argument("--ssl-certfile", metavar="PEM", help="client certificate")
    sec.add_argument("--ssl-keyfile", metavar="PEM", help="client private key")
    return p


def _engine_arguments(p: argparse.ArgumentParser) -> None:
    where = p.add_argument_group("where the work runs")
    how = where.add_mutually_exclusive_group()
    how.add_argument("--in-process", dest="in_process", action="store_const", const=True,
                     help="read, de-duplicate and write in this process, without Spark")
    how.add_argument("--spark", dest="in_process", action="store_const", const=False,
                     help="run the work as a Spark job, however few the records")
    where.add_argument("--in-process-below", type=int, default=IN_PROCESS_BELOW, metavar="N",
                       help="without either flag: in process when fewer than N failed-topic "
                       "offsets are to be read (default: %(default)s)")
    where.add_argument("--progress-every", type=float, metavar="SECS",
                       help="a progress line on stderr every SECS seconds while the job "
                       "runs; 0: none (default: 5, none under spark-submit, which sends "
                       "the driver's stderr to its stdout and shows its own progress)")


def client_settings(args: argparse.Namespace) -> dict[str, str]:
    """The connection and security options the command line gives, for every client."""
    settings = {"security_protocol": args.security_protocol,
                "sasl_mechanism": args.sasl_mechanism,
                "sasl_plain_username": args.sasl_username,
                "ssl_cafile": args.ssl_cafile, "ssl_certfile": args.ssl_certfile,
                "ssl_keyfile": args.ssl_keyfile}
    if args.sasl_username is not None:
        settings["sasl_plain_password"] = os.environ.get(args.sasl_password_env)
    return {k: v for k, v in settings.items() if v is not None}


def parse_args(argv: Sequence[str] | None = None,
               prog: str | None = None) -> argparse.Namespace:
    """The parsed command line; exits with status 2 and usage on bad arguments. ``prog``
    names the program in messages (default: the name it was started by)."""
    return _parser(prog).parse_args(argv)


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


class _NotFromPy4J(logging.Filter):
    """Drops what py4j logs to the root logger: its tracebacks when Ctrl-C or a stopped
    JVM cuts a call short. Its errors that matter reach the job as exceptions."""

    def filter(self, record: logging.LogRecord) -> bool:
        return f"{os.sep}py4j{os.sep}" not in record.pathname


@contextlib.contextmanager
def _without_py4j_logs() -> Iterator[None]:
    root, quiet = logging.getLogger(), _NotFromPy4J()
    root.addFilter(quiet)
    try:
        with _quiet("py4j"):
            yield
    finally:
        root.removeFilter(quiet)


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    # The JVM and Spark write to file descriptor 1 directly; point it at stderr meanwhile.
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _bad_numbers(args: argparse.Namespace) -> str | None:
    if args.max_offsets_per_task < 1:
        return "--max-offsets-per-task must be at least 1"
    if args.max_attempts < 1:
        return "--max-attempts must be at least 1"
    if args.in_process_below < 0:
        return "--in-process-below must be at least 0"
    if args.max_records_per_sec is not None and args.max_records_per_sec <= 0:
        return "--max-records-per-sec must be more than 0"
    if args.sasl_username is not None and args.sasl_password_env not in os.environ:
        return f"--sasl-username needs the password in ${args.sasl_password_env}"
    return None


def run() -> None:
    """Console-script entry point (``stormloop-replay``): ``main`` then exit."""
    sys.exit(main())


def _options(args: argparse.Namespace) -> ReplayOptions:
    return ReplayOptions(
        bootstrap_servers=args.bootstrap_servers, failed_topic=args.failed_topic,
        target_topic=args.target_topic, group_id=args.group_id, master=args.master,
        dry_run=args.dry_run, reasons=tuple(args.reason), since_ms=args.since,
        connect_timeout_s=args.connect_timeout,
        max_offsets_per_task=args.max_offsets_per_task, max_attempts=args.max_attempts,
        max_records_per_sec=args.max_records_per_sec, client=client_settings(args),
        in_process=_in_process(args), in_process_below=args.in_process_below)


def _in_process(args: argparse.Namespace) -> bool | None:
    """As asked; else Spark under spark-submit (its JVM runs anyway), else by size."""
    if args.in_process is None and _SPARK_SUBMIT_ENV in os.environ:
        return False
    return args.in_process


def _progress_every(args: argparse.Namespace) -> float:
    if args.progress_every is not None:
        return float(args.progress_every)
    return 0.0 if _SPARK_SUBMIT_ENV in os.environ else _PROGRESS_EVERY_SECS


def _interrupted(exc: BaseException) -> bool:
    """Ctrl-C, or an error it caused (py4j's, when the JVM went down with the signal)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, KeyboardInterrupt):
            return True
        seen = seen.__context__
    return False


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """Run the job from the command line, print its summary, return the exit status.
    ``prog`` names the program in messages (default: the name it was started by)."""
    args = parse_args(argv, prog)
    prog = prog or os.path.basename(sys.argv[0])
    problem = _bad_numbers(args)
    if problem is None and args.in_process is False and find_java() is None:
        problem = str(JavaNotFound())
    if problem is not None:
        print(f"{prog}: error: {problem}", file=sys.stderr)
        return 2
    progress = Progress(prog, every_s=_progress_every(args))
    try:
        with _quiet("aiokafka"), _without_py4j_logs(), _stdout_to_stderr(), progress:
            summary = run_replay(_options(args), progress=progress)
    except (BrokerUnreachable, TopicNotFound, JavaNotFound) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except BaseException as exc:
        if not _interrupted(exc):
            raise
        print(f"{prog}: interrupted while {progress.stage}; the group's progress is "
              "committed only at the end, so the next run reads these records again",
              file=sys.stderr)
        return _INTERRUPTED
    print(format_summary(summary))
    return 0
