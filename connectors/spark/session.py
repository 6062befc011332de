"""A SparkSession able to run the replay job, locally or on a cluster.

Three things must hold before any Python code runs on an executor: the workers start the
driver's interpreter (``PYSPARK_PYTHON``; otherwise they start whatever ``python3`` is on
the PATH, which may lack pyarrow and this project), they can import ``connectors`` (and
``engine``, which ``connectors.kafka`` may import), and the Kafka data sources are registered.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

import connectors
from connectors.spark.datasource import FailedRecordsDataSource, KafkaDataSource

__all__ = ["build_session", "prepare_session"]

_SHIPPED_PACKAGES = ("connectors", "engine")


def build_session(master: str | None = None, app_name: str = "replay-failed",
                  conf: dict[str, str] | None = None) -> SparkSession:
    """Create (or join) a session on ``master`` ready for the Kafka data sources.

    ``master=None`` keeps a master given to ``spark-submit`` (or in spark-defaults.conf)
    and means ``local[*]`` otherwise. Settings given there win over this function's
    defaults (the console progress bar on, workers on this interpreter, one shuffle
    partition per core); ``conf`` wins over both.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    SparkContext._ensure_initialized()  # spark-submit's JVM if there is one, else a new one
    given = SparkConf()  # loads spark-submit's --conf and spark-defaults.conf
    conf = conf or {}
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
