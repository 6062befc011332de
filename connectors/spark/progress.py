"""A replay run's progress, told on standard error every few seconds while it runs."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """What a run is doing now: ``stage``, records ``read`` of ``to_read`` and ``written``
    (plain attributes the run sets as it goes; ``read`` is None where the run does not
    count them, as in Spark's tasks), and ``status``, a hook for figures only the run's
    engine knows (Spark's stages and tasks).

    While entered, a daemon thread prints ``line()`` every ``every_s`` seconds to ``stream``
    (standard error by default); a run that ends sooner prints nothing. ``every_s=None``
    never prints.
    """

    def __init__(self, prog: str = "replay", every_s: float | None = 5.0,
                 stream: TextIO | None = None) -> None:
        self.prog = prog
        self.every_s = every_s
        self.stream = stream
        self.stage = "starting"
        self.to_read: int | None = None
        self.read: int | None = 0
        self.written = 0
        self.status: Callable[[], str | None] | None = None
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def line(self) -> str:
        """One line: the stage, the counts known so far, the engine's status, the time."""
        parts = [f"{self.prog}: {self.stage}"]
        if self.to_read is not None and self.read is None:
            parts.append(f"{self.to_read:,} records to read")
        elif self.to_read is not None:
            parts.append(f"read {self.read:,} of {self.to_read:,} records")
        if self.written or self.stage == "writing":
            parts.append(f"written {self.written:,}")
        extra = self._status()
        if extra:
            parts.append(extra)
        parts.append(f"{time.monotonic() - self._started:.0f} s")
        return ", ".join(parts)

    def _status(self) -> str | None:
        try:
            return self.status() if self.status is not None else None
        except Exception:  # the engine may be stopping; the line goes out without it
            return None

    def _tell(self, every_s: float) -> None:
        while not self._stop.wait(every_s):
            stream = self.stream or sys.stderr
            print(self.line(), file=stream, flush=True)

    def __enter__(self) -> Progress:
        if self.every_s is not None and self.every_s > 0:
            self._thread = threading.Thread(target=self._tell, args=(self.every_s,),
                                            name="replay-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
