"""One replay run from start to end: probe the broker, plan the offset ranges, do the
work in process or in Spark, commit the group's progress.

Importing this module does not import Spark: a run that stays in process never does.
What the work is (parse, de-duplicate, filter, write) is in ``replay``'s docstring; the
in-process twin is ``in_process``.
"""

from __future__ import annotations

import asyncio
import time

from connectors.spark.in_process import replay_in_process
from connectors.spark.java import JavaNotFound, find_java
from connectors.spark.offsets import commit_ranges, plan_ranges, probe_broker
from connectors.spark.options import ReplayOptions
from connectors.spark.progress import Progress
from connectors.spark.summary import PhaseClock, ReplaySummary

__all__ = ["JavaNotFound", "find_java", "run_replay", "runs_in_process"]


def runs_in_process(options: ReplayOptions, offsets: int, spark: object | None) -> bool:
    """Whether a run over ``offsets`` failed-topic offsets skips Spark: as
    ``options.in_process`` says, else when no session was given and there are fewer
    offsets than ``options.in_process_below``."""
    if options.in_process is not None:
        return options.in_process
    return spark is None and offsets < options.in_process_below


def run_replay(options: ReplayOptions, spark: object | None = None,
               progress: Progress | None = None) -> ReplaySummary:
    """Run the job once (see ``replay``'s docstring) and return what it did.

    Raises ``BrokerUnreachable`` within ``connect_timeout_s`` and before any other work if
    no broker answers, ``TopicNotFound`` if the failed topic does not exist. Spark starts
    only when there is something to read and the run does not stay in process
    (``runs_in_process``); a session passed in is used and left running. ``progress``,
    when given, is kept up to date.
    """
    started = time.monotonic()
    progress = progress or Progress(every_s=None)
    summary = ReplaySummary(options.failed_topic, options.group_id, options.dry_run,
                            max_attempts=options.max_attempts)
    clock = PhaseClock(summary.phases)
    bootstrap, client = options.bootstrap_servers, options.client
    progress.stage = "planning"
    asyncio.run(probe_broker(bootstrap, options.connect_timeout_s, client))
    ranges = asyncio.run(plan_ranges(bootstrap, options.failed_topic, options.group_id,
                                     client=client))
    clock.lap("plan")
    offsets = progress.to_read = sum(r.size for r in ranges)
    if offsets:
        if runs_in_process(options, offsets, spark):
            summary.in_process = True
            replay_in_process(options, ranges, summary, progress)
            clock.lap("read, de-duplicate and write" if not options.dry_run
                      else "read and de-duplicate")
        else:
            from connectors.spark.replay import replay_with_spark

            replay_with_spark(options, ranges, summary, clock, spark,  # type: ignore[arg-type]
                              progress)
        if not options.dry_run:
            progress.stage = "committing"
            asyncio.run(commit_ranges(bootstrap, options.group_id, ranges, client=client))
            clock.lap("commit")
    summary.elapsed_s = time.monotonic() - started
    return summary
