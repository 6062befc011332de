"""Install time: ``pip install -e .`` of a fresh clone against a reference package's install.

    python scripts/bench_install.py [--runs 5] [--baseline 'quixstreams==3.28.*'] [--goal 1.4]
                                    [--commit HEAD [REV ...]]

Each run clones the repository afresh at each ``--commit`` (HEAD unless told), makes a
fresh virtual environment for each and times ``pip install -e <clone>`` (which compiles
the hot path with mypyc), and, in another fresh environment, ``pip install <baseline>``;
the order rotates from run to run. Only pip is timed: cloning and making the environments
are not. One unmeasured install of each first warms pip's cache, as on a machine that has
installed both before; nothing of the build is kept from one install to the next (each
clone and environment is new). Each project install must have the compiled hot path (a
fall-back to the plain modules is an error, not a fast install). Prints each run, the
medians and their ratio against the goal, with the CPU seconds of pip and its
subprocesses beside the wall time: on a machine shared with other work the compile waits
for the CPU, and the CPU seconds show what a change saves regardless.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run(args: list[str], cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``args`` (in ``cwd``); on failure, raise with the tail of its output."""
    done = subprocess.run(args, capture_output=True, text=True, env=clean_env(), cwd=cwd)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-20:])
        raise RuntimeError(f"{' '.join(args)} exited with {done.returncode}:\n{tail}")
    return done


def clean_env() -> dict[str, str]:
    """The environment without PYTHONPATH, so nothing imports this checkout by accident."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def fresh_clone(dest: Path, commit: str) -> Path:
    """A clone of the repository checked out at ``commit`` (no build output in it)."""
    run(["git", "clone", "--quiet", "--no-checkout", str(REPO), str(dest)])
    run(["git", "-C", str(dest), "checkout", "--quiet", "--detach", commit])
    return dest


def fresh_venv(dest: Path, python: str) -> str:
    """A new virtual environment; returns its interpreter."""
    run([python, "-m", "venv", str(dest)])
    return str(dest / "bin" / "python")


def children_cpu() -> float:
    """CPU seconds (user and system) of this process's waited-for children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_pip_install(python: str, args: list[str]) -> tuple[float, float]:
    """Seconds that ``pip install args`` takes in the environment of ``python``, and the
    CPU seconds it and its subprocesses (the build, the C compiler) use."""
    cpu, started = children_cpu(), time.perf_counter()
    run([python, "-m", "pip", "install", *args])
    return time.perf_counter() - started, children_cpu() - cpu


def hot_path_compiled(python: str) -> bool:
    """True when the environment's engine imports its compiled hot-path modules."""
    probe = "import engine.hotpath as h; print(h.compiled())"
    return run([python, "-c", probe], cwd=tempfile.gettempdir()).stdout.strip() == "True"


class Installs:
    """Fresh clones and environments under one scratch directory, numbered."""

    def __init__(self, scratch: Path, python: str, baseline: str) -> None:
        self.scratch, self.python, self.baseline = scratch, python, baseline
        self.count = 0

    def _next(self, what: str) -> Path:
        self.count += 1
        return self.scratch / f"{self.count:02d}-{what}"

    def project(self, commit: str) -> tuple[float, float]:
        """Seconds and CPU seconds for ``pip install -e`` of a fresh clone at ``commit``;
        raises when the install has the plain modules instead of the compiled ones."""
        clone = fresh_clone(self._next("clone"), commit)
        python = fresh_venv(self._next("venv"), self.python)
        seconds, cpu = timed_pip_install(python, ["-e", str(clone)])
        if not hot_path_compiled(python):
            raise RuntimeError(f"the install of {commit[:10]} has the plain modules (see "
                               f"{clone / 'engine' / '_build_note.txt'})")
        return seconds, cpu

    def reference(self) -> tuple[float, float]:
        """Seconds and CPU seconds for ``pip install <baseline>`` in a fresh environment."""
        python = fresh_venv(self._next("venv"), self.python)
        return timed_pip_install(python, [self.baseline])

    def one_run(self, commits: list[str], turn: int) -> list[tuple[float, float]]:
        """Every commit's install and the baseline's, in an order that rotates with
        ``turn``; returned in the order of ``commits``, the baseline last."""
        jobs = [*((c, lambda c=c: self.project(c)) for c in commits), ("", self.reference)]
        shift = turn % len(jobs)
        done = dict((name, job()) for name, job in jobs[shift:] + jobs[:shift])
        return [done[c] for c in commits] + [done[""]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline", default="quixstreams==3.28.*")
    parser.add_argument("--goal", type=float, default=1.4,
                        help="the largest acceptable ratio of the medians")
    parser.add_argument("--commit", nargs="+", default=["HEAD"],
                        help="the revisions to clone; several are measured in the same runs "
                             "(to compare a change with the build before it)")
    parser.add_argument("--python", default=sys.executable,
                        help="the interpreter the environments are made from")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    args = parser.parse_args()
    commits = [run(["git", "-C", str(REPO), "rev-parse", c]).stdout.strip()
               for c in args.commit]
    scratch = Path(tempfile.mkdtemp(prefix="bench-install-"))
    installs = Installs(scratch, args.python, args.baseline)
    try:
        installs.project(commits[0])  # warm-ups: pip's cache holds both installs' downloads
        installs.reference()
        report(installs, commits, args)
    finally:
        if args.keep:
            print(f"scratch directory kept: {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


def report(installs: Installs, commits: list[str], args: argparse.Namespace) -> None:
    """Run, print each run as it ends, then the medians and the ratios against the goal."""
    names = [c[:10] for c in commits]
    print(f"pip install -e <fresh clone> against pip install {args.baseline}: fresh "
          f"environments, warm pip cache, {args.runs} runs, order rotating; seconds of wall "
          f"time (CPU seconds of pip and its subprocesses), {os.cpu_count()} cpus")
    print("  run  " + "".join(f"{n:>20}  {'ratio':>5}  " for n in names)
          + f"{'baseline':>16}")
    rows = []
    for turn in range(args.runs):
        row = installs.one_run(commits, turn)
        rows.append(row)
        print(f"  {turn + 1:>3}  " + line(row), flush=True)
    medians = [(statistics.median(r[i][0] for r in rows),
                statistics.median(r[i][1] for r in rows)) for i in range(len(commits) + 1)]
    print("  med  " + line(medians))
    for name, (seconds, _) in zip(names, medians, strict=False):
        ratio = seconds / medians[-1][0]
        print(f"  {name}: {seconds:.1f} s against {medians[-1][0]:.1f} s, ratio {ratio:.2f}, "
              f"goal <= {args.goal} {'met' if ratio <= args.goal else 'NOT met'}")
    print(f"  load average (1 min) at the end: {os.getloadavg()[0]:.2f}; other work on the "
          f"machine slows the compile more than the baseline's unpacking")


def line(row: list[tuple[float, float]]) -> str:
    """One row of the table: each commit's time, CPU time and ratio, then the baseline's."""
    base = row[-1][0]
    cells = [f"{s:>10.1f} ({cpu:>5.1f} cpu)  {s / base:>5.2f}  " for s, cpu in row[:-1]]
    return "".join(cells) + f"{base:>6.1f} ({row[-1][1]:>5.1f} cpu)"


if __name__ == "__main__":
    main()
