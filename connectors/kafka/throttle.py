"""Log lines at most once per interval per kind, with a count of what was held back.

``LogThrottle`` is pure (time is an argument): the Kafka spout and bolt use it for lines
that can repeat per record (a failed produce, a tuple failed by a bolt). ``throttle_aiokafka``
installs the same rule on aiokafka's own loggers, keyed by logger and message template and
timed by each log record's own timestamp, so a broker outage writes a handful of aiokafka
lines per interval instead of one per retry.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable

__all__ = ["DEFAULT_INTERVAL_SECS", "LogThrottle", "throttle_aiokafka"]

DEFAULT_INTERVAL_SECS = 60.0
"""How often one kind of line may repeat, unless configured otherwise."""

# Filters see only what is logged on their own logger, so each module's logger is named.
_AIOKAFKA_LOGGERS = ("aiokafka", "aiokafka.admin.client", "aiokafka.cluster", "aiokafka.conn",
                     "aiokafka.consumer.consumer", "aiokafka.consumer.fetcher",
                     "aiokafka.consumer.group_coordinator",
                     "aiokafka.consumer.subscription_state", "aiokafka.helpers",
                     "aiokafka.producer.producer", "aiokafka.producer.sender")


class LogThrottle:
    """Lets one event per ``key`` through per ``interval`` seconds.

    Guarantee: ``allow(key, now)`` is true for the first event of a key and then at most
    once per ``interval``; it returns how many events of that key were held back since
    the previous one let through (0 for the first), so a line can say so.
    """

    __slots__ = ("_held", "_last", "interval")

    def __init__(self, interval: float = DEFAULT_INTERVAL_SECS) -> None:
        if interval < 0:
            raise ValueError(f"log throttle interval must be >= 0, got {interval}")
        self.interval = interval
        self._last: dict[Hashable, float] = {}
        self._held: dict[Hashable, int] = {}

    def allow(self, key: Hashable, now: float) -> tuple[bool, int]:
        """``(let through, events held back before this one)``."""
        last = self._last.get(key)
        if last is not None and now - last < self.interval:
            self._held[key] = self._held.get(key, 0) + 1
            return False, 0
        self._last[key] = now
        return True, self._held.pop(key, 0)


class _AiokafkaFilter(logging.Filter):
    def __init__(self, interval: float) -> None:
        super().__init__()
        self.throttle = LogThrottle(interval)

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.CRITICAL:
            return True
        allowed, held = self.throttle.allow((record.name, record.msg), record.created)
        if allowed and held:
            record.msg = f"{record.msg} ({held} similar lines held back)"
        return allowed


_installed: _AiokafkaFilter | None = None


def throttle_aiokafka(interval: float = DEFAULT_INTERVAL_SECS) -> None:
    """Throttle aiokafka's loggers to one line per message template per ``interval``
    seconds (idempotent: a later call only changes the interval)."""
    global _installed
    if _installed is not None:
        _installed.throttle.interval = interval
        return
    _installed = _AiokafkaFilter(interval)
    for name in _AIOKAFKA_LOGGERS:
        logging.getLogger(name).addFilter(_installed)
