"""The problem line of a run that failed at start, with the extra that installs a module."""

from __future__ import annotations

from engine.startup import install_hint, problem


def test_the_last_line_naming_a_failure_is_the_problem() -> None:
    lines = ["INFO engine.supervisor: worker 0 started (pid 12)",
             "Traceback (most recent call last):",
             '  File "x.py", line 3, in <module>',
             "ERROR aiokafka: Unable connect to \"h:1\"",
             "engine.errors.TopologyError: bolt 'b' task 2: prepare raised ValueError: bad"]
    assert problem(lines) == ("engine.errors.TopologyError: bolt 'b' task 2: prepare raised "
                              "ValueError: bad")
    assert problem(["error: t.py: no such file"]) == "error: t.py: no such file"
    assert problem(["INFO all well", "WARNING slow"]) is None


def test_a_missing_module_of_an_extra_names_the_extra_once() -> None:
    assert problem(["ModuleNotFoundError: No module named 'msgspec'"]) == (
        "ModuleNotFoundError: No module named 'msgspec'; install it with pip install "
        "'stormloop[kafka]'")
    said = ("error: t.py: import failed: ModuleNotFoundError: No module named 'aiokafka'; "
            "install it with pip install 'stormloop[kafka]'")
    assert problem([said]) == said
    assert install_hint("pyspark.sql") == "; install it with pip install 'stormloop[spark]'"
    assert install_hint("numpy") == ""
