"""`kalma kg import` as a Spark job: the same store (`kalma.kg.store`'s layout), built by a cluster.

When a user needs it: never for the builder's own needs (the one-machine import reads the truthy
dump in hours on a 16-core machine, and the store it writes answers the builder), but when the
import itself must fit a time a cluster affords, or the dumps already live in HDFS or object
storage, as Wikimedia's own analytics keep them (they turn the JSON dumps into Parquet with
Spark). `.bz2` files split across workers (Hadoop's codec is splittable); `.gz` files do not (one
task reads the whole file): recompress, or give the `.bz2` dump.

Lines are parsed by the same code as the one-machine import (`kalma.kg.dumps`), a partition at a
time; the subset filter (`--classes`, `--qids`) is a join here, since a subject's lines may lie in
two partitions; deduplication and sorting are Spark's. `meta.json` says `"engine": "spark"`.

    kalma kg import latest-truthy.nt.bz2 -o STORE --spark local[*]
    spark-submit --master yarn -m kalma.kg.spark_import latest-all.json.bz2 hdfs:///STORE   (as a module)
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..jsonl import dumps
from .dumps import EXAMPLES, Filter, JsonEntities, Malformed, NTriples, Rows, check_dump, dump_format
from .store import COLUMNS, SORT, STORE_VERSION, TABLES, dump_date

LINES_PER_BLOCK = 50_000


def _parse(fmt: str, languages: tuple[str, ...], keep: Filter) -> Any:
    """A function over one partition's lines: ("labels" | "claims" | "properties" | "malformed", row)."""

    def run(lines: Iterable[str]) -> Iterator[tuple[str, tuple[Any, ...]]]:
        parser = NTriples(languages, Filter()) if fmt == "nt" else JsonEntities(languages, keep)
        bad = Malformed()
        chunk: list[str] = []
        for line in [*lines, None]:
            if line is not None:
                chunk.append(line)
            if chunk and (line is None or len(chunk) >= LINES_PER_BLOCK):
                rows = Rows()
                parser.parse(("\n".join(chunk) + "\n").encode("utf-8"), rows, bad)
                parser.finish(rows)
                yield from (("labels", r) for r in rows.labels)
                yield from (("claims", r) for r in rows.claims)
                yield from (("properties", r) for r in rows.props)
                yield from (("redirects", r) for r in rows.redirects)
                yield ("lines", (len(chunk),))
                chunk = []
        yield from (("malformed", (e,)) for e in bad.named("a partition of the dump"))
        yield ("malformed_count", (bad.count,))

    return run


def _tagged(table: str) -> Any:
    return lambda row: row[0] == table


def _schema(table: str) -> Any:
    from pyspark.sql import types as T

    kinds = {"string": T.StringType(), "int8": T.ByteType(), "bool": T.BooleanType()}
    return T.StructType([T.StructField(n, kinds[k], True) for n, k in COLUMNS[table]])


def session(master: str | None = "local[*]") -> Any:
    """A Spark session for imports on `master` (None: spark-submit's `--master`, else local). Spark
    starts its Python workers with `python3` from PATH unless told: with the suite installed in a
    virtual environment nobody activated, that interpreter has no `kalma`. Use this one (a
    cluster's own PYSPARK_PYTHON, where set, stands)."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName("kalma kg import").config("spark.ui.enabled", "false")
    spark = (builder.master(master) if master else builder).getOrCreate()
    if str(spark.sparkContext.master).startswith("local"):
        # Spark's 200 shuffle partitions are sized for a cluster: on one machine they are 200 tasks
        # per join, group and sort, nearly all of them empty.
        spark.conf.set("spark.sql.shuffle.partitions", str(spark.sparkContext.defaultParallelism))
    return spark


def spark_import(
    dump: str | Path, store: str | Path, master: str | None = "local[*]", languages: Sequence[str] = ("en",), keep: Filter | None = None
) -> dict[str, Any]:
    """Import `dump` into `store` with Spark (see the module docstring); returns `meta.json`. The
    caller's active session, where there is one, is used instead of a new one on `master`."""
    from pyspark.sql import Observation, SparkSession
    from pyspark.sql import functions as F

    keep = keep or Filter()
    began = time.monotonic()
    fmt, compression = dump_format(dump)
    check_dump(dump, fmt, compression)
    # A session the caller started (spark-submit's, a notebook's, several imports in a row) is
    # used and left running; one started here is stopped here.
    active = SparkSession.getActiveSession()
    spark = active or session(master)
    try:
        tagged = spark.sparkContext.textFile(str(dump)).mapPartitions(_parse(fmt, tuple(languages), keep)).cache()
        frames = {t: spark.createDataFrame(tagged.filter(_tagged(t)).map(lambda r: r[1]), _schema(t)) for t in TABLES}
        claims = frames["claims"]
        if fmt == "nt" and not keep.everything:  # a subject's lines may lie in two partitions: filter by a join
            members = claims.filter((F.col("pid") == "P31") & (F.col("value_type") == "item") & F.col("value").isin(sorted(keep.classes))).select("subject")
            named = spark.createDataFrame([(q,) for q in sorted(keep.qids)] or [("",)], "subject string")
            kept = members.union(named).union(claims.filter(F.col("subject").startswith("P")).select("subject")).distinct()
            claims = claims.join(kept, "subject", "left_semi")
        labels = frames["labels"]
        if not keep.everything:
            ids = (
                claims.select(F.col("subject").alias("id"))
                .union(claims.filter(F.col("value_type").isin("item", "uri")).select(F.col("value").alias("id")))
                .union(claims.select(F.col("pid").alias("id")))
                .union(frames["properties"].select(F.col("pid").alias("id")))
                .distinct()
            )
            labels = labels.join(ids, "id", "left_semi")
        final = {
            "labels": labels.dropDuplicates(),
            "claims": claims.groupBy("subject", "pid", "value", "value_type", "datatype", "lang").agg(
                F.max("precision").alias("precision"), F.max("calendar").alias("calendar")
            ),
            "properties": frames["properties"].groupBy("pid").agg(F.max("type").alias("type"), F.max("direct").alias("direct")),
            "redirects": frames["redirects"].dropDuplicates(),
        }
        counts = {}
        for table in TABLES:
            # the rows are counted as they are written (an observation), not by a job reading them back
            written = Observation(table)
            rows = final[table].select(*[n for n, _ in COLUMNS[table]]).observe(written, F.count(F.lit(1)).alias("rows"))
            rows.orderBy(*[c.strip() for c in SORT[table].split(",")]).write.mode("overwrite").parquet(str(Path(store) / table))
            counts[table] = written.get["rows"]
        # the lines read and the malformed ones, in one job: a few rows a partition
        tally = tagged.filter(lambda r: r[0] in ("lines", "malformed_count", "malformed")).collect()
        lines = sum(r[1][0] for r in tally if r[0] == "lines")
        bad = sum(r[1][0] for r in tally if r[0] == "malformed_count")
        examples = [r[1][0] for r in tally if r[0] == "malformed"][:EXAMPLES]
        tagged.unpersist()  # a caller's session runs on: the parsed dump leaves its executors' memory
    finally:
        if active is None:
            spark.stop()
    path = Path(dump)
    meta = {
        "kalma_store": STORE_VERSION,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "dump": {
            "path": str(path.resolve()),
            "size": path.stat().st_size,
            "compression": compression,
            "engine": "spark",
            "master": spark.sparkContext.master,
            "date": dump_date(str(path)),
        },
        "options": {"languages": list(languages), "classes": sorted(keep.classes), "qids": len(keep.qids), "format": fmt},
        "rows": counts,
        "read": {"decompressed_bytes": None, "lines": int(lines), "seconds": round(time.monotonic() - began, 2)},
        "malformed": {"lines": int(bad), "first": examples},
    }
    Path(store).mkdir(parents=True, exist_ok=True)
    (Path(store) / "meta.json").write_text(dumps(meta, indent=1) + "\n")
    return meta


if __name__ == "__main__":  # spark-submit … -m kalma.kg.spark_import DUMP STORE [MASTER]
    spark_import(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
