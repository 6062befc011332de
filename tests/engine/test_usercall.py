"""The one policy for calling user code: def-or-async once, which exceptions are the user's."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from engine.errors import FailedException
from engine.usercall import accepts, awaitable, invoke, is_async, is_user_error, method, report


class Thing:
    def plain(self, x: int) -> int:
        return x + 1

    async def coro(self, x: int) -> int:
        return x + 2


async def test_method_decides_def_or_async_once_and_invoke_calls_both() -> None:
    thing = Thing()
    assert method(thing, "plain")[1] is False and method(thing, "coro")[1] is True
    assert await invoke(method(thing, "plain"), 1) == 2
    assert await invoke(method(thing, "coro"), 1) == 3
    assert await awaitable(thing, "plain")(1) == 2 and await awaitable(thing, "coro")(1) == 3
    assert is_async(Thing, "coro") and not is_async(Thing, "plain")


async def test_optional_method_is_a_no_op_and_a_missing_one_names_itself() -> None:
    assert await invoke(method(Thing(), "close", optional=True)) is None
    with pytest.raises(AttributeError, match="Thing has no method 'close'"):
        method(Thing(), "close")


def test_accepts_looks_for_the_named_parameter() -> None:
    def with_reason(msg_id: Any, reason: Any = None) -> None: ...
    def without(msg_id: Any) -> None: ...
    assert accepts(with_reason, "reason") and not accepts(without, "reason")
    assert not accepts(len, "reason")


async def test_exceptions_and_a_users_own_cancellation_are_the_users() -> None:
    assert is_user_error(ValueError("x")) and is_user_error(FailedException("x"))
    assert is_user_error(asyncio.CancelledError())  # this task is not being cancelled
    assert not is_user_error(KeyboardInterrupt())


async def test_cancellation_of_the_running_task_is_not_the_users() -> None:
    seen: list[bool] = []

    async def body() -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError as exc:
            seen.append(is_user_error(exc))
            raise

    task = asyncio.create_task(body())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen == [False]


def test_report_skips_an_expected_failed_exception() -> None:
    class Coll:
        errors: list[BaseException] = []

        def report_error(self, exc: BaseException) -> None:
            self.errors.append(exc)

    coll = Coll()
    report(coll, FailedException("no"), failed_is_expected=True)
    report(coll, FailedException("yes"))
    report(coll, ValueError("v"), failed_is_expected=True)
    assert [str(e) for e in coll.errors] == ["yes", "v"]
