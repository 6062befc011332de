"""The one way the engine calls user code, and what it does when user code raises.

Calling: every user method may be ``def`` or ``async def``. ``method`` decides which once,
when a task starts, and returns ``(callable, is_async)``; hot loops branch on the flag
instead of inspecting each call's result. ``invoke`` calls such a pair; ``awaitable``
wraps a method as an async callable for code that is not on the hot path.

Raising: ``is_user_error(exc)`` says whether an exception that escaped user code is the
user's (handle it and go on) or must propagate. Every ``Exception`` is the user's,
``FailedException`` included. A ``CancelledError`` is the user's too (an awaited future
of theirs was cancelled) unless the running task itself is being cancelled: that is the
engine stopping, and it propagates, as do ``KeyboardInterrupt`` and ``SystemExit``.
Every site that runs user code on behalf of tuples writes::

    try:
        execute(tup)
    except BaseException as exc:
        fail_on_error(collector, exc, (tup,))

``fail_on_error`` re-raises what is not the user's, fails the tuples with
``error_reason(exc, component)`` (kind ``"error"``, ``"Type: message"``) and counts and
logs the error, unless it is a ``FailedException`` raised where failing is an expected
outcome (a ``BasicBolt``, a transactional batch). Sites with no tuple to fail (a
spout's ``next_tuple``, ``ack``, ``close``, a bolt's timer) call ``report_on_error``.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

from engine.errors import FailedException
from engine.failure import FailReason, error_reason

if TYPE_CHECKING:
    from engine.anchoring import Collector
    from engine.tuples import Tuple

__all__ = ["UserMethod", "accepts", "awaitable", "batch_ack", "fail_on_error",
           "invoke", "is_async", "is_user_error", "method", "report", "report_on_error"]

UserMethod = tuple[Callable[..., Any], bool]


async def _nothing(*_: Any) -> None:
    return None


def is_async(obj: Any, name: str) -> bool:
    """Whether ``obj.name`` (an instance's or a class's) is a coroutine function."""
    return inspect.iscoroutinefunction(getattr(obj, name, None))


def method(obj: Any, name: str, *, optional: bool = False) -> UserMethod:
    """``obj.name`` and whether it is a coroutine function, decided once.

    With ``optional``, a missing method becomes a no-op instead of an ``AttributeError``.
    """
    fn = getattr(obj, name, None)
    if fn is None:
        if optional:
            return _nothing, True
        raise AttributeError(f"{type(obj).__name__} has no method {name!r}")
    return fn, inspect.iscoroutinefunction(fn)


async def invoke(m: UserMethod, *args: Any) -> Any:
    """Call a ``method`` pair, awaiting it if it is a coroutine function."""
    fn, run_async = m
    return await fn(*args) if run_async else fn(*args)


def awaitable(obj: Any, name: str, *, optional: bool = False) -> Callable[..., Awaitable[Any]]:
    """An async callable for ``obj.name``: the coroutine method itself, or a wrapper."""
    fn, run_async = method(obj, name, optional=optional)
    if run_async:
        return fn

    async def call(*args: Any) -> Any:
        return fn(*args)

    return call


def accepts(fn: Callable[..., Any], parameter: str) -> bool:
    """Whether ``fn``'s signature has a parameter named ``parameter``."""
    try:
        return parameter in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def batch_ack(spout: Any) -> Callable[[list[Any]], Any] | None:
    """The spout's sync ``ack_many``, unless a subclass overrides ``ack`` below the class
    that defines it (that ``ack`` must then see every id) or ``ack_many`` is async."""
    many = getattr(spout, "ack_many", None)
    if many is None or inspect.iscoroutinefunction(many):
        return None
    mro = type(spout).__mro__
    owner_many = next((c for c in mro if "ack_many" in vars(c)), None)
    owner_ack = next((c for c in mro if "ack" in vars(c)), None)
    if owner_many is None or owner_ack is None or not issubclass(owner_many, owner_ack):
        return None
    return many  # type: ignore[no-any-return]


def is_user_error(exc: BaseException) -> bool:
    """True when ``exc`` escaping user code is the user's to handle; False: re-raise it."""
    if isinstance(exc, Exception):
        return True
    if isinstance(exc, asyncio.CancelledError):
        task = asyncio.current_task()
        return task is None or not task.cancelling()
    return False


def report(collector: Any, exc: BaseException, *, failed_is_expected: bool = False) -> None:
    """Count and log ``exc`` as an error of ``collector``'s component, unless expected."""
    if failed_is_expected and isinstance(exc, FailedException):
        return
    collector.report_error(exc)


def report_on_error(collector: Any, exc: BaseException) -> None:
    """``exc`` escaped user code that handles no tuple: re-raise it unless it is the
    user's, else count and log it as an error of ``collector``'s component."""
    if not is_user_error(exc):
        raise exc
    collector.report_error(exc)


def fail_on_error(collector: Collector, exc: BaseException, tuples: Iterable[Tuple] = (),
                  *, failed_is_expected: bool = False) -> FailReason:
    """``exc`` escaped user code working on ``tuples``: re-raise it unless it is the
    user's; else fail each of ``tuples`` with ``error_reason`` (kind ``"error"``, or
    ``"explicit"`` for a ``FailedException``), report it (see ``report``) and return
    the reason."""
    if not is_user_error(exc):
        raise exc
    reason = error_reason(exc, collector.component)
    for tup in tuples:
        collector.fail_with(tup, reason)
    report(collector, exc, failed_is_expected=failed_is_expected)
    return reason
