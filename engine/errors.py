"""Exceptions the engine raises or understands.

    ValueError
     ├── TopologyError   an invalid topology: names the component and the problem
     └── ConfigError     an invalid configuration value: names the key
    Exception
     └── FailedException raised by user code to fail the tuple (or batch) being processed
"""

from __future__ import annotations

__all__ = ["ConfigError", "FailedException", "TopologyError"]


class TopologyError(ValueError):
    """An invalid topology or submission; the message names the component and the problem."""


class ConfigError(ValueError):
    """An invalid configuration value; the message names the key, the value and what is valid."""


class FailedException(Exception):
    """Raised from ``execute`` (or ``finish_batch``) to fail the input tuple or batch.

    Unlike any other exception it is an expected outcome: the tuple is failed and replayed
    but no error is counted or logged.
    """
