"""The import as a Spark job (local mode): the same store as the one-machine import, in both dump
formats and with a subset. Skips without PySpark or Java."""

from __future__ import annotations

import os
import shutil

import pytest

from kalma.kg.dumps import Filter
from kalma.kg.store import LocalWikidata, import_dump
from tests.unit.test_wikidata_dumps import entities, table, write_json_dump, write_nt_dump

pytestmark = pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas")
pytest.importorskip("pyspark", reason="the Spark job needs PySpark (pip install pyspark)")
if shutil.which("java") is None:
    pytest.skip("Spark needs Java (apt-get install default-jre-headless)", allow_module_level=True)


def test_a_spark_job_writes_the_store_one_machine_writes(tmp_path, monkeypatch):
    """The same store and the same counts (rows, lines, a malformed line) as the one-machine import;
    Spark's workers run this interpreter even when the `python3` on PATH is another (here one that
    cannot run anything), as for a user whose virtual environment is not activated; a session the
    caller started is used and left running, with nothing of the import left cached; one the
    import started is stopped."""
    from pyspark.sql import SparkSession

    from kalma.kg.spark_import import session, spark_import

    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "python3").write_text("#!/bin/sh\necho 'not the interpreter kalma runs in' >&2\nexit 1\n")
    (shim / "python3").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}:{os.environ['PATH']}")
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    # Spark's defaults are sized for big data on a cluster (the product keeps them): for this test's
    # few rows, Spark's own JIT warm-up is most of the time. C1 alone, no whole-stage code generation
    # and no adaptive execution (a job per shuffle) halve it. Both sessions below see these: they
    # share the one JVM this process starts.
    monkeypatch.setenv(
        "PYSPARK_SUBMIT_ARGS",
        "--conf spark.sql.codegen.wholeStage=false --conf spark.sql.adaptive.enabled=false --driver-java-options -XX:TieredStopAtLevel=1 pyspark-shell",
    )

    cols = {"labels": "*", "properties": "*", "claims": "*"}
    broken = {
        "json": '{"id": "Q2", "claims": {',
        "nt": "<http://www.wikidata.org/entity/Q9> <http://www.wikidata.org/prop/direct/P31> <http://www.wikidata.org/entity/Q5>",
    }
    callers = session("local[2]")
    for fmt, write, keep in (("json", write_json_dump, Filter()), ("nt", write_nt_dump, Filter(classes=frozenset({"Q571"})))):
        lines = write(tmp_path / f"latest.{fmt}", entities()).read_text().splitlines()
        dump = tmp_path / f"latest.{fmt}"
        dump.write_text("\n".join([*lines[:2], broken[fmt], *lines[2:]]) + "\n")  # one malformed line, passed over
        one = import_dump(dump, tmp_path / f"one-{fmt}", keep=keep, progress=False)
        meta = spark_import(dump, tmp_path / f"spark-{fmt}", "local[1]", keep=keep)
        for name, wanted in cols.items():
            assert table(tmp_path / f"spark-{fmt}", name, wanted) == table(tmp_path / f"one-{fmt}", name, wanted), (fmt, name)
        assert meta["rows"] == {name: len(table(tmp_path / f"spark-{fmt}", name)) for name in meta["rows"]} and meta["rows"]["claims"] > 0
        assert meta["read"]["lines"] == len(lines) + 1 and meta["malformed"]["lines"] == one["malformed"]["lines"] == 1
        assert [x.split(": ", 1)[1] for x in meta["malformed"]["first"]] == [x.split(": ", 1)[1] for x in one["malformed"]["first"]]
        assert meta["dump"]["engine"] == "spark"
        assert LocalWikidata(tmp_path / f"spark-{fmt}").labels(["Q4132785"]) == {"Q4132785": "Bring the Jubilee"}
        if fmt == "json":  # the caller's session ran it (its master, not the one asked for) and still runs
            assert meta["dump"]["master"] == "local[2]" and SparkSession.getActiveSession() is callers
            assert callers.sparkContext._jsc.getPersistentRDDs().isEmpty()  # nothing of the import left cached
            callers.stop()
        else:  # no session was active: the import started its own and stopped it
            assert meta["dump"]["master"] == "local[1]" and SparkSession.getActiveSession() is None
