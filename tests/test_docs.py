"""The documentation: every ``python`` block of README.md and docs/ runs as pasted, the
configuration reference matches the keys ``engine.config`` knows, and links resolve.

A block fenced as ``python`` is run in a fresh interpreter from the repository root, so
write fragments (shell commands, signatures) under another fence (``sh``, ``text``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import engine.config as config

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted([ROOT / "README.md", *DOCS.glob("*.md")])

_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _blocks() -> list[tuple[str, str]]:
    out = []
    for page in PAGES:
        for n, match in enumerate(_BLOCK.finditer(page.read_text()), 1):
            out.append((f"{page.relative_to(ROOT)}#{n}", match.group(1)))
    return out


@pytest.mark.parametrize(("where", "code"), _blocks(), ids=[w for w, _ in _blocks()])
def test_python_block_runs_as_pasted(where: str, code: str, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{where} failed:\n{proc.stderr[-3000:]}"


def test_there_are_blocks_to_run() -> None:
    assert len(_blocks()) >= 5


def _documented_keys() -> dict[str, str]:
    """Key -> default cell, from the rows of configuration.md's tables."""
    rows = re.findall(r"^\| `([a-z][a-z0-9_.]+)` \| `([^`]*)` \|", (DOCS / "configuration.md")
                      .read_text(), re.M)
    return dict(rows)


def test_every_key_engine_config_knows_is_documented_with_its_default() -> None:
    documented = _documented_keys()
    constants = {v for k, v in vars(config).items()
                 if k.isupper() and not k.startswith("_") and isinstance(v, str) and "." in v}
    missing = sorted((config.known_keys() | constants) - set(documented))
    assert not missing, f"docs/configuration.md does not document {missing}"
    for key, default in config.DEFAULTS.items():
        assert documented[key] == repr(default), (key, documented[key], default)


def test_every_documented_key_is_read_somewhere() -> None:
    sources = "".join(p.read_text() for d in ("engine", "connectors", "topologies")
                      for p in (ROOT / d).rglob("*.py"))
    stale = [key for key in _documented_keys() if f'"{key}"' not in sources]
    assert not stale, f"docs/configuration.md documents keys nothing reads: {stale}"


def test_index_links_every_page() -> None:
    linked = set(_LINK.findall((DOCS / "index.md").read_text()))
    pages = {p.name for p in DOCS.glob("*.md")} - {"index.md"}
    assert pages <= linked, f"docs/index.md does not link {sorted(pages - linked)}"


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_relative_links_resolve(page: Path) -> None:
    for target in _LINK.findall(page.read_text()):
        if "://" in target or target.startswith("mailto:"):
            continue
        path = (page.parent / target).resolve()
        assert path.exists(), f"{page.relative_to(ROOT)} links {target}, which does not exist"


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


def _fence_problems(text: str) -> list[str]:
    """Code fences that do not close as written (CommonMark): a fence still open at the
    end, or a line inside a block that starts like its closing fence but has text after it
    (it renders as code, and so does everything up to the next fence)."""
    problems: list[str] = []
    opened: tuple[int, str] | None = None
    for n, line in enumerate(text.splitlines(), 1):
        match = _FENCE.match(line)
        if match is None:
            continue
        fence, rest = match.groups()
        if opened is None:
            if not (fence[0] == "`" and "`" in rest):  # else inline code, not a fence
                opened = (n, fence)
        elif fence[0] == opened[1][0] and len(fence) >= len(opened[1]):
            if rest.strip():
                problems.append(f"line {n}: text after the fence closing line {opened[0]}'s "
                                f"block, so it does not close")
            else:
                opened = None
    if opened is not None:
        problems.append(f"line {opened[0]}: a code fence never closed")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_code_fences_close(page: Path) -> None:
    problems = _fence_problems(page.read_text())
    assert not problems, f"{page.relative_to(ROOT)}: {'; '.join(problems)}"


def test_readme_opens_with_the_two_commands_and_the_python_version() -> None:
    text = (ROOT / "README.md").read_text()
    head = text[:1500]
    assert "pip install -e . && stormloop run topologies/word_count.py" in head
    assert "pip install -e '.[test]' && python -m pytest" in head
    assert "Python 3.11" in head
    ci = (ROOT / ".ci" / "run").read_text()
    assert "pip install -e '.[test]' && python -m pytest" in ci
