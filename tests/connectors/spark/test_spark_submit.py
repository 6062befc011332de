"""replay_failed.py launched by spark-submit, as on a cluster: Spark's own JVM, the job's
code shipped to the workers, the summary printed, the records written."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pyspark

from tests.connectors.spark.helpers import failed, produce, read_all, unique

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "replay_failed.py"
SPARK_SUBMIT = Path(pyspark.__file__).parent / "bin" / "spark-submit"


def test_spark_submit_runs_the_job(kafka_broker, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap
    failed_topic, orders = unique("failed"), unique("orders")
    kafka_broker.create_topic_sync(failed_topic)
    kafka_broker.create_topic_sync(orders)
    payloads = [failed(orders, i).to_json() for i in range(3)] + [b"junk"]
    asyncio.run(produce(bootstrap, failed_topic, payloads))
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable}
    result = subprocess.run(
        [str(SPARK_SUBMIT), "--master", "local[1]", "--conf", "spark.ui.enabled=false",
         "--conf", "spark.ui.showConsoleProgress=false", str(SCRIPT),
         "--bootstrap-servers", bootstrap, "--failed-topic", failed_topic],
        capture_output=True, text=True, timeout=240, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    totals = dict(line.rsplit(None, 1) for line in result.stdout.splitlines()[3:8])
    assert totals == {"  read": "4", "  malformed": "1", "  duplicates dropped": "0",
                      "  filtered out": "0", "  replayed": "3"}
    records = asyncio.run(read_all(bootstrap, orders))
    assert sorted(r.value for r in records) == [b"v0", b"v1", b"v2"]
