"""The Java that Spark starts with, and the error when there is none."""

from __future__ import annotations

import os
import shutil

__all__ = ["JavaNotFound", "find_java"]


class JavaNotFound(RuntimeError):
    """Spark was to start and there is no Java to start it with."""

    def __init__(self) -> None:
        super().__init__("no Java found (Spark needs Java 17 or later): set JAVA_HOME or put "
                         "java on the PATH")


def find_java() -> str | None:
    """The ``java`` Spark will start (``JAVA_HOME/bin/java``, else on the PATH), or None."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = os.path.join(home, "bin", "java")
        return candidate if os.access(candidate, os.X_OK) else None
    return shutil.which("java")
