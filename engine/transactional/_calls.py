"""Calling user methods that may be ``def`` or ``async def``, decided once per method."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["async_method", "is_async_method"]


async def _nothing(*_: Any) -> None:
    return None


def async_method(obj: Any, name: str, *, optional: bool = False
                 ) -> Callable[..., Awaitable[Any]]:
    """An awaitable callable for ``obj.name``: the coroutine method itself, or a wrapper.

    With ``optional``, a missing method becomes a no-op instead of an ``AttributeError``.
    """
    method = getattr(obj, name, None)
    if method is None:
        if optional:
            return _nothing
        raise AttributeError(f"{type(obj).__name__} has no method {name!r}")
    if inspect.iscoroutinefunction(method):
        return method  # type: ignore[no-any-return]

    async def call(*args: Any) -> Any:
        return method(*args)

    return call


def is_async_method(cls: type, name: str) -> bool:
    """Whether ``cls.name`` is a coroutine function (for per-call branching on hot paths)."""
    return inspect.iscoroutinefunction(getattr(cls, name, None))
