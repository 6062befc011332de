"""The C compile of the hot path: mypyc's runtime library as one early file, the rest side by
side.

distutils compiles an extension's sources one after the other, and extensions one after
the other. ``ParallelCompile`` starts the runtime library's compile at once, on a thread
of its own, while mypyc still analyses the engine (the library does not depend on the
engine's code), and gives the compiler a ``compile`` that takes the library's object from
that early compile and compiles every other C file side by side, the largest first, so
that it is not the one left running at the end.

The runtime library is compiled as one C file that includes all of its files (as mypyc
itself does when it writes one C file): one by one, each of them parses the same Python
and runtime headers again, and they take twice the compiler time.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

Compile = Callable[..., list[str]]


class ParallelCompile:
    """Compiles ``runtime_files`` (names in the directory ``runtime_dir``) as the one file
    ``unit`` from the start; ``compiler`` then stands in for a distutils compiler's
    ``compile``, where mypyc's copies of those files (under ``copies_dir``) become that
    one object."""

    def __init__(self, compile_one: Compile, runtime_files: Iterable[str], unit: Path,
                 copies_dir: Path, args: dict[str, Any]) -> None:
        names = list(runtime_files)
        self.copies = {str(copies_dir / name) for name in names}
        unit.parent.mkdir(parents=True, exist_ok=True)
        # <> looks only in the include path, where the library's own directory comes
        # first in ``args``: not in the unit's directory, where mypyc copies the files.
        unit.write_text("".join(f"#include <{name}>\n" for name in names), encoding="utf-8")
        self.unit = str(unit)
        self.args = args
        self.compile_one = compile_one
        self._pool = ThreadPoolExecutor(1)
        self._early = self._pool.submit(compile_one, [self.unit], **args)

    def compiler(self, workers: int) -> Compile:
        """A drop-in for the compiler's ``compile`` that uses ``workers`` threads."""

        def compile_parallel(sources: list[str], **kwargs: Any) -> list[str]:
            runtime = any(s in self.copies for s in sources)
            rest = sorted((s for s in sources if s not in self.copies),
                          key=lambda s: -os.path.getsize(s))
            same = {k: kwargs.get(k) for k in self.args} == self.args
            if runtime and not same:  # not expected; then the unit compiles again
                rest.insert(0, self.unit)
            with ThreadPoolExecutor(workers) as pool:
                objects = pool.map(lambda s: self.compile_one([s], **kwargs), rest)
                done = dict(zip(rest, objects, strict=True))
            ordered = [obj for source in sources if source in done for obj in done[source]]
            if runtime:
                ordered += done[self.unit] if self.unit in done else self._early.result()
            return ordered

        return compile_parallel

    def close(self) -> None:
        """Wait for the early compile to end (``compile`` raised its failure, if any)."""
        self._pool.shutdown(wait=True, cancel_futures=True)
