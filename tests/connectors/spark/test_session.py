"""The session the replay job builds: its driver JVM's options, and when they are left to
the user."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pyspark import SparkContext

from connectors.spark import session as session_module
from connectors.spark.session import DRIVER_JIT_OPTIONS


@pytest.mark.skipif("PYSPARK_GATEWAY_PORT" in os.environ or "PYSPARK_SUBMIT_ARGS" in os.environ
                    or session_module._defaults_set("spark.driver.defaultJavaOptions"),
                    reason="the driver JVM's options are the user's here")
def test_a_driver_jvm_launched_here_starts_with_the_jit_options(spark) -> None:
    jvm = spark.sparkContext._jvm
    arguments = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
                     .getInputArguments())
    assert set(DRIVER_JIT_OPTIONS.split()) <= set(arguments)


@pytest.fixture
def no_jvm(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """As before a first launch, with an empty Spark configuration directory."""
    monkeypatch.setattr(SparkContext, "_gateway", None)
    for name in ("PYSPARK_GATEWAY_PORT", "PYSPARK_SUBMIT_ARGS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    return tmp_path


def _launch_options(conf: dict[str, str]) -> str | None:
    launch = session_module._launch_conf(conf)
    return None if launch is None else launch.get("spark.driver.defaultJavaOptions")


def test_launch_options_default_to_the_jit_options(no_jvm: Path) -> None:
    assert _launch_options({}) == DRIVER_JIT_OPTIONS


def test_options_given_in_conf_win(no_jvm: Path) -> None:
    assert _launch_options({"spark.driver.defaultJavaOptions": "-Xss4m"}) == "-Xss4m"


@pytest.mark.parametrize("line", ["spark.driver.defaultJavaOptions -Xss4m",
                                  "  spark.driver.defaultJavaOptions=-Xss4m",
                                  "spark.driver.defaultJavaOptions: -Xss4m"])
def test_a_spark_defaults_setting_is_left_alone(no_jvm: Path, line: str) -> None:
    (no_jvm / "spark-defaults.conf").write_text(f"spark.master local[2]\n{line}\n")
    assert _launch_options({}) is None


def test_other_defaults_do_not_count(no_jvm: Path) -> None:
    (no_jvm / "spark-defaults.conf").write_text(
        "spark.driver.defaultJavaOptionsX -Xss4m\n# spark.driver.defaultJavaOptions -Xss4m\n")
    assert _launch_options({}) == DRIVER_JIT_OPTIONS


def test_a_launch_set_up_by_the_user_or_a_running_jvm_is_left_alone(
        no_jvm: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--driver-memory 2g pyspark-shell")
    assert _launch_options({}) is None
    monkeypatch.delenv("PYSPARK_SUBMIT_ARGS")
    monkeypatch.setattr(SparkContext, "_gateway", object())
    assert _launch_options({}) is None
