"""A SparkSession able to run the replay job, locally or on a cluster.

Three things must hold before any Python code runs on an executor: the workers start the
driver's interpreter (``PYSPARK_PYTHON``; otherwise they start whatever ``python3`` is on
the PATH, which may lack pyarrow and this project), they can import ``connectors`` (and
``engine``, which ``connectors.kafka`` may import), and the Kafka data sources are registered.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pyspark
from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

import connectors
from connectors.spark.datasource import FailedRecordsDataSource, KafkaDataSource

__all__ = ["DRIVER_JIT_OPTIONS", "build_session", "prepare_session"]

_SHIPPED_PACKAGES = ("connectors", "engine")

DRIVER_JIT_OPTIONS = ("-XX:Tier4InvocationThreshold=50000 -XX:Tier4MinInvocationThreshold=20000 "
                      "-XX:Tier4CompileThreshold=60000 -XX:Tier4BackEdgeThreshold=400000")
"""HotSpot options for a driver JVM ``build_session`` launches: the optimising (C2) compiler
takes only methods run tens of thousands of times (HotSpot's thresholds are about ten times
lower). Per-record code crosses them within the first batches of a run; Spark's planning,
scheduling and task set-up, run a few thousand times per job, stay with the quick first-tier
compiler instead of costing the optimising one about a second of CPU per job."""

_JAVA_OPTIONS = "spark.driver.defaultJavaOptions"


def build_session(master: str | None = None, app_name: str = "replay-failed",
                  conf: dict[str, str] | None = None) -> SparkSession:
    """Create (or join) a session on ``master`` ready for the Kafka data sources.

    ``master=None`` keeps a master given to ``spark-submit`` (or in spark-defaults.conf)
    and means ``local[*]`` otherwise. Settings given there win over this function's
    defaults (the console progress bar on, workers on this interpreter, one shuffle
    partition per core); ``conf`` wins over both. A driver JVM launched here starts with
    ``DRIVER_JIT_OPTIONS`` as ``spark.driver.defaultJavaOptions`` unless ``conf``,
    ``PYSPARK_SUBMIT_ARGS`` or a spark-defaults.conf says otherwise.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    conf = conf or {}
    # spark-submit's JVM if there is one, else a new one.
    SparkContext._ensure_initialized(conf=_launch_conf(conf))
    given = SparkConf()  # loads spark-submit's --conf and spark-defaults.conf
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    elif not given.contains("spark.master"):
        builder = builder.master("local[*]")
    defaults = {"spark.pyspark.python": os.environ["PYSPARK_PYTHON"],
                "spark.ui.showConsoleProgress": "true"}
    for key, value in {**defaults, **conf}.items():
        if key in conf or not given.contains(key):
            builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    shuffle = "spark.sql.shuffle.partitions"
    if shuffle not in conf and not given.contains(shuffle):
        # Spark's 200 suits large clusters; left unchosen, one task per core is plenty.
        parallelism = spark.sparkContext.defaultParallelism
        spark.conf.set(shuffle, str(max(2, parallelism)))
    prepare_session(spark)
    return spark


def _launch_conf(conf: dict[str, str]) -> SparkConf | None:
    """The settings a JVM launched by this process must start with (driver JVM options
    cannot change later); None when a JVM runs already or its launch is the user's."""
    if (SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ
            or "PYSPARK_SUBMIT_ARGS" in os.environ):
        return None
    options = conf.get(_JAVA_OPTIONS)
    if options is None:
        if _defaults_set(_JAVA_OPTIONS):
            return None
        options = DRIVER_JIT_OPTIONS
    return SparkConf(loadDefaults=False).set(_JAVA_OPTIONS, options)


def _defaults_set(key: str) -> bool:
    """Whether the spark-defaults.conf spark-submit will read sets ``key``."""
    conf_dir = os.environ.get("SPARK_CONF_DIR")
    if conf_dir is None:
        home = os.environ.get("SPARK_HOME") or str(Path(pyspark.__file__).parent)
        conf_dir = os.path.join(home, "conf")
    try:
        lines = Path(conf_dir, "spark-defaults.conf").read_text().splitlines()
    except OSError:
        return False
    setting = re.compile(rf"\s*{re.escape(key)}\s*[\s=:]")
    return any(setting.match(line) for line in lines)


def prepare_session(spark: SparkSession) -> None:
    """Register the Kafka data sources, ship this project's code to the executors, and make
    ``spark`` the calling thread's active session.

    Code is shipped as a zip through ``addPyFile`` when it runs from a source tree that the
    executors' Python would not find by itself; idempotent per session. A zip holds source
    only, so executors that import the project on their own keep its compiled modules.
    """
    root = Path(connectors.__file__).resolve().parent.parent
    marker = "stormloop.code"  # "shipped", or "found" where the executors import it
    if spark.conf.get(marker, None) is None:
        found = _workers_find(spark, root)
        if not found:
            spark.sparkContext.addPyFile(str(_zip_packages(root)))
        spark.conf.set(marker, "found" if found else "shipped")
    # After addPyFile: registration captures the session's Python includes.
    spark.dataSource.register(KafkaDataSource)
    spark.dataSource.register(FailedRecordsDataSource)
    # The JVM resolves a Python data source on write through the calling thread's active
    # session, which a thread other than the session's creator does not have; PySpark has
    # no public setter for it.
    jvm = spark._jvm
    assert jvm is not None, "a classic (non-Connect) session has a JVM gateway"
    jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)


def _workers_find(spark: SparkSession, root: Path) -> bool:
    """Whether the executors' Python imports this very project without help: an installed
    distribution (installed on the executors too), or a local master whose workers run this
    interpreter and, started in another working directory, import both packages from
    ``root``."""
    if "site-packages" in root.parts or "dist-packages" in root.parts:
        return True
    python = spark.conf.get("spark.pyspark.python", None) or os.environ.get("PYSPARK_PYTHON")
    if not spark.sparkContext.master.startswith("local") or python != sys.executable:
        return False
    probe = ("import connectors, engine, sys; "
             "sys.stdout.write(connectors.__file__ + '\\n' + engine.__file__)")
    try:
        found = subprocess.run([python, "-c", probe], cwd=tempfile.gettempdir(),
                               capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return all(Path(path).resolve().parent.parent == root for path in found.splitlines())


def _zip_packages(root: Path) -> Path:
    target = Path(tempfile.mkdtemp(prefix="stormloop-")) / "stormloop_src.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for package in _SHIPPED_PACKAGES:
            for path in sorted((root / package).rglob("*.py")):
                archive.write(path, path.relative_to(root).as_posix())
    return target
