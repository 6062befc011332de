"""The layers of the engine hold: import contracts (``lint-imports``), no import circle in
``engine/`` and ``connectors/`` (type-only imports counted), and every engine module placed
in a layer."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parent.parent
# The modules above the core (pyproject.toml's [tool.importlinter] draws the layers).
NOT_CORE = {"engine.__init__", "engine.__main__", "engine.cli", "engine.cluster",
            "engine.run_outcome", "engine.supervisor"}


def _contracts() -> dict[str, dict[str, object]]:
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return {c["id"]: c for c in conf["tool"]["importlinter"]["contracts"]}


def test_the_import_contracts_hold() -> None:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.fail("lint-imports not found: pip install 'stormloop[test]' (import-linter)")
    done = subprocess.run([exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def test_every_engine_module_is_in_a_layer() -> None:
    core = set(_contracts()["core"]["source_modules"])  # type: ignore[arg-type]
    top = {f"engine.{p.stem}" for p in (ROOT / "engine").glob("*.py")}
    assert sorted(top - core - NOT_CORE) == [], (
        "add the new engine module to the core contract in pyproject.toml (or to the "
        "layers above it)")
    packages = {f"engine.{p.parent.name}" for p in (ROOT / "engine").glob("*/__init__.py")}
    assert sorted(core - top - packages) == [], (
        "the core contract names modules that do not exist")


def _circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph``, or None (depth-first, iterative)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(graph):
        if state.get(start):
            continue
        path, stack = [start], [iter(sorted(graph[start]))]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            elif not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph.get(nxt, ()))))
    return None


@pytest.mark.parametrize("package", ["engine", "connectors"])
def test_no_import_circle(package: str) -> None:
    # Type-only imports and imports inside functions count: each is a dependency.
    g = grimp.build_graph(package, cache_dir=None)
    graph = {m: set(g.find_modules_directly_imported_by(m)) for m in g.modules}
    circle = _circle(graph)
    assert circle is None, " -> ".join(circle or [])


def test_the_circle_finder_finds_circles() -> None:
    assert _circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _circle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None
