"""Waiting for a line a child process prints (its readiness), instead of sleeping."""

from __future__ import annotations

import threading
from typing import IO

__all__ = ["wait_for_line"]


def wait_for_line(stream: IO[str], wanted: str, timeout: float = 60) -> list[str]:
    """The lines read from ``stream`` up to and including the first that ends with
    ``wanted``; an ``AssertionError`` naming what was seen on end of output or after
    ``timeout`` seconds. The lines after it stay in ``stream`` for the caller."""
    seen: list[str] = []
    done = threading.Event()

    def read() -> None:
        for line in iter(stream.readline, ""):
            seen.append(line)
            if line.rstrip("\n").endswith(wanted):
                break
        done.set()

    threading.Thread(target=read, daemon=True, name="wait-for-line").start()
    arrived = done.wait(timeout)
    assert arrived and seen and seen[-1].rstrip("\n").endswith(wanted), (
        f"{'no' if arrived else f'after {timeout:g} s, no'} line ending with {wanted!r}; "
        f"seen: {seen[-20:]}")
    return seen
