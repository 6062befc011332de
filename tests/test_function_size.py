"""Small functions: none in ``engine/`` is longer than 40 lines (def line to last line,
docstring included), so that each says one thing."""

from __future__ import annotations

import ast
from pathlib import Path

ENGINE = Path(__file__).resolve().parent.parent / "engine"
MAX_LINES = 40


def long_functions(root: Path, limit: int = MAX_LINES) -> list[str]:
    """``path:line name (n lines)`` for every function under ``root`` over ``limit`` lines."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > limit:
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno} "
                                 f"{node.name} ({n} lines)")
    return found


def test_no_function_in_the_engine_is_over_40_lines() -> None:
    assert long_functions(ENGINE) == []


def test_the_check_sees_a_long_function(tmp_path: Path) -> None:
    body = "".join(f"    x = {i}\n" for i in range(40))
    (tmp_path / "m.py").write_text(f"async def f():\n{body}\ndef g():\n    pass\n")
    assert long_functions(tmp_path) == [f"{tmp_path.name}/m.py:1 f (41 lines)"]
