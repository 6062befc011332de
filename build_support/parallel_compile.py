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
        """A drop-in for the compiler's ``compile`` that uses ``workers`` threads. For the
        extension with the runtime library (mypyc's group: the engine's modules), the
        other C files are packed into ``workers`` files of about the same size."""

        def compile_parallel(sources: list[str], **kwargs: Any) -> list[str]:
            runtime = any(s in self.copies for s in sources)
            rest = [s for s in sources if s not in self.copies]
            same = {k: kwargs.get(k) for k in self.args} == self.args
            jobs = ({s: [s] for s in rest} if not runtime
                    else pack(rest, workers, Path(self.unit).parent))
            if runtime and not same:  # not expected; then the unit compiles again
                jobs[self.unit] = []
            order = sorted(jobs, key=lambda s: -os.path.getsize(s))
            with ThreadPoolExecutor(workers) as pool:
                objects = pool.map(lambda s: self._compile(s, jobs[s], kwargs), order)
                done = dict(zip(order, objects, strict=True))
            ordered = [obj for source in sorted(done) for obj in done[source]]
            if runtime and self.unit not in done:
                ordered += self._early.result()
            return ordered

        return compile_parallel

    def _compile(self, source: str, members: list[str], kwargs: dict[str, Any]) -> list[str]:
        """The objects of ``source``; when it is a packed file that does not compile (two
        of its members define the same name, say), of its members one by one."""
        if len(members) <= 1:
            return self.compile_one([source], **kwargs)
        try:
            return self.compile_one([source], **kwargs)
        except Exception:
            return [obj for member in members for obj in self.compile_one([member], **kwargs)]

    def close(self) -> None:
        """Wait for the early compile to end (``compile`` raised its failure, if any)."""
        self._pool.shutdown(wait=True, cancel_futures=True)


def pack(sources: list[str], count: int, directory: Path) -> dict[str, list[str]]:
    """``sources`` packed into at most ``count`` C files of about the same size (the largest
    source first, onto the smallest file), written in ``directory``: each file name
    maps to the sources it includes. A source alone stays itself.

    Each C file mypyc writes parses the same Python, runtime and group headers (a fifth
    of a module's compile time or more): packed, the engine's modules compile with a
    tenth less compiler time, in as many files as there are workers."""
    shares: list[list[str]] = [[] for _ in range(min(count, len(sources)))]
    sizes = [0] * len(shares)
    for source in sorted(sources, key=lambda s: -os.path.getsize(s)):
        i = sizes.index(min(sizes))
        shares[i].append(source)
        sizes[i] += os.path.getsize(source)
    jobs = {}
    for i, share in enumerate(shares):
        if len(share) == 1:
            jobs[share[0]] = share
            continue
        packed = directory / f"mypyc_pack{i}.c"
        lines = [f'#include "{Path(os.path.relpath(s, packed.parent)).as_posix()}"\n'
                 for s in sorted(share)]
        packed.write_text("".join(lines), encoding="utf-8")
        jobs[str(packed)] = share
    return jobs
