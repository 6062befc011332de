"""The virtual-time loop: idle waits jump, busy work and ready I/O do not."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest

from engine.clock import loop_clock, now
from engine.testing import VirtualTimeLoop


def test_sleep_jumps_to_the_next_timer(virtual_loop: VirtualTimeLoop) -> None:
    async def main() -> list[float]:
        seen = []
        for delay in (30, 0.5, 3600):
            await asyncio.sleep(delay)
            seen.append(now())
        return seen

    real = time.monotonic()
    assert virtual_loop.run(main()) == [30, 30.5, 3630.5]
    assert time.monotonic() - real < 1


def test_wait_for_times_out_at_virtual_time(virtual_loop: VirtualTimeLoop) -> None:
    async def main() -> float:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(asyncio.Event().wait(), 12)
        return loop_clock()()

    assert virtual_loop.run(main()) == 12


def test_tasks_interleave_in_timer_order(virtual_loop: VirtualTimeLoop) -> None:
    order: list[str] = []

    async def after(name: str, delay: float) -> None:
        await asyncio.sleep(delay)
        order.append(name)

    async def main() -> None:
        await asyncio.gather(after("c", 3), after("a", 1), after("b", 2))

    virtual_loop.run(main())
    assert order == ["a", "b", "c"] and virtual_loop.time() == 3


def test_ready_io_is_served_before_time_jumps(virtual_loop: VirtualTimeLoop) -> None:
    async def main() -> tuple[bytes, float]:
        a, b = socket.socketpair()
        reader, writer = await asyncio.open_connection(sock=a)
        b.sendall(b"hello")
        data = await asyncio.wait_for(reader.readexactly(5), 10)
        writer.close()
        b.close()
        return data, now()

    data, at = virtual_loop.run(main())
    assert data == b"hello" and at < 10


def test_time_cannot_go_back(virtual_loop: VirtualTimeLoop) -> None:
    with pytest.raises(ValueError, match="cannot go back"):
        virtual_loop.advance(-1)


def test_loop_clock_outside_a_loop_reads_the_running_loop_later() -> None:
    clock = loop_clock()
    with pytest.raises(RuntimeError):
        clock()
