"""What one replay run is asked to do: ``ReplayOptions``, importable without Spark."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["IN_PROCESS_BELOW", "ReplayOptions"]

IN_PROCESS_BELOW = 10_000
"""Below this many failed-topic offsets to read, a run does its work in process, without
starting Spark (unless told otherwise): a local session costs tens of seconds to start."""


@dataclass(frozen=True, slots=True)
class ReplayOptions:
    """Everything one run needs; the command line maps onto these fields one to one."""

    bootstrap_servers: str
    failed_topic: str
    target_topic: str | None = None
    group_id: str = "replay-failed"
    master: str | None = None
    dry_run: bool = False
    reasons: tuple[str, ...] = ()
    since_ms: int | None = None
    connect_timeout_s: float = 5.0
    max_offsets_per_task: int = 50_000
    max_attempts: int = 5
    max_records_per_sec: float | None = None
    client: dict[str, str] = field(default_factory=dict)
    """Connection and security options for every Kafka client of the job."""
    in_process: bool | None = None
    """True: read, de-duplicate and write in this process; False: in a Spark job; None:
    in process when fewer than ``in_process_below`` offsets are to be read and no Spark
    session was handed to the run."""
    in_process_below: int = IN_PROCESS_BELOW
