"""Which produce and fetch errors mean what: an outage, a record too large, or a fault
that no retry will fix (an invalid topic, a refused authorization)."""

from __future__ import annotations

from aiokafka.errors import (
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    MessageSizeTooLargeError,
    NodeNotReadyError,
    RecordListTooLargeError,
    RequestTimedOutError,
)

__all__ = ["describe", "is_outage", "is_permanent", "is_too_large"]

_OUTAGE = (KafkaConnectionError, KafkaTimeoutError, NodeNotReadyError, RequestTimedOutError,
           ConnectionError, TimeoutError)
_TOO_LARGE = (MessageSizeTooLargeError, RecordListTooLargeError)


def describe(exc: BaseException) -> str:
    """``"<ExceptionType>: <message>"``, the form failure reasons take."""
    name, text = type(exc).__name__, str(exc)
    # aiokafka's broker errors read "[Error 10] MessageSizeTooLargeError: ..." already.
    prefix = text.find(f"] {name}")
    if text.startswith("[Error ") and prefix > 0:
        text = text[prefix + len(name) + 2:].lstrip(": ")
    elif text.startswith(f"{name}: "):
        text = text[len(name) + 2:]
    return f"{name}: {text}" if text else name


def is_outage(exc: BaseException) -> bool:
    """The broker could not be reached or did not answer in time."""
    return isinstance(exc, _OUTAGE)


def is_too_large(exc: BaseException) -> bool:
    """The record (or its batch) is over the producer's or the broker's size limit."""
    return isinstance(exc, _TOO_LARGE)


def is_permanent(exc: BaseException) -> bool:
    """Retrying the same request cannot succeed (record too large, invalid topic, denied)."""
    if is_too_large(exc):
        return True
    return isinstance(exc, KafkaError) and not exc.retriable and not is_outage(exc)
