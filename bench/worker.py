"""One measured operation, run in a fresh process by bench/harness.py.

    python bench/worker.py JOB_JSON

JOB_JSON names an operation and an engine:

    {"op": "preview" | "stream" | "arrow" | "load", "engine": ENGINE,
     "table": DELTA_DIR, "sql": SQL (over the table registered as `t`),
     "limit": 20, "conn": CONNECTION_STRING, "target": TABLE_NAME,
     "ddl": CREATE_TABLE_STATEMENT}

Engines: "deltafunnel" (whichever deltafunnel this Python imports: ours or
the reference 0.6.0, run from its own virtualenv), "pyarrow"
(pyarrow.dataset over the table's files), "deltalake" (DeltaTable
to_pyarrow_table), "duckdb" (read_parquet over the table's files),
"mssql-python" (bulkcopy_arrow fed by a pyarrow.dataset reader).

Prints one JSON line: {"seconds": wall time of the operation, "rows": rows
produced or loaded}.  The clock starts after imports (every engine pays
its own import outside the measurement) and stops when the result is
complete.  CPU time and peak RSS are measured by the parent with wait4().
"""

import json
import os
import sys
import time


def delta_files(table):
    """Data files of the Delta table (with partition values) from the deltalake package."""
    import deltalake

    return deltalake.DeltaTable(table).file_uris()


def dataset(table):
    import pyarrow.dataset as ds

    files = delta_files(table)
    partitioned = any("=" in os.path.relpath(f.replace("file://", ""), table).split(os.sep)[0] for f in files)
    if partitioned:
        return ds.dataset(files, format="parquet", partitioning=ds.partitioning(flavor="hive"),
                          partition_base_dir=table)
    return ds.dataset(files, format="parquet")


def duck_source(table):
    files = delta_files(table)
    quoted = ", ".join("'" + f.replace("file://", "").replace("'", "''") + "'" for f in files)
    partitioned = any("=" in os.path.relpath(f.replace("file://", ""), table).split(os.sep)[0] for f in files)
    return f"read_parquet([{quoted}]{', hive_partitioning = true' if partitioned else ''})"


def deltafunnel_session(job):
    import deltafunnel

    kw = {}
    if job.get("conn"):
        kw["default_mssql_connection_string"] = job["conn"]
        kw["validation_options"] = {"target_validation_mode": "disabled"}
        kw["schema_options"] = {"timezone_policy": "normalize_utc_datetime2"}
    s = deltafunnel.Session(**kw)
    s.delta_lake(job["table"], name="t")
    return s


def run_deltafunnel(job):
    op = job["op"]
    if op == "preview":
        s = deltafunnel_session(job)
        p = s.table_from_sql(job["sql"]).preview(job.get("limit", 20))
        return len(p.text.splitlines()) - 4
    if op == "stream":
        # The stream benchmark plans a SQL Server target but never connects.
        job = dict(job, conn="Server=tcp:127.0.0.1,1;User Id=u;Password=p")
        s = deltafunnel_session(job)
        spec = s.table_from_sql(job["sql"]).to_mssql(schema="dbo", table="bench", load_mode="create_and_load")
        r = s.write_all_for_stream_benchmark([spec], options={"cache_mode": "disabled"})
        return r["workflow"]["outputs"][0]["output_row_count"]["value"]
    if op == "arrow":
        s = deltafunnel_session(job)
        return s.table_from_sql(job["sql"]).to_arrow().num_rows
    if op == "load":
        s = deltafunnel_session(job)
        r = s.table_from_sql(job["sql"]).write_to_mssql(schema="dbo", table=job["target"],
                                                        load_mode="create_and_load")
        return r["write_stats"]["rows_written"]
    raise SystemExit(f"deltafunnel cannot run {op}")


def run_pyarrow(job):
    import pyarrow.compute as pc

    d = dataset(job["table"])
    flt = None
    if job.get("filter"):
        col, val = job["filter"]
        flt = pc.field(col) == val
    if job["op"] == "preview":
        return d.head(job.get("limit", 20), filter=flt).num_rows
    if job["op"] == "arrow":
        return d.to_table(filter=flt).num_rows
    raise SystemExit(f"pyarrow cannot run {job['op']}")


def run_deltalake(job):
    import deltalake

    if job["op"] == "arrow":
        return deltalake.DeltaTable(job["table"]).to_pyarrow_table().num_rows
    raise SystemExit(f"deltalake cannot run {job['op']}")


def run_duckdb(job):
    import duckdb

    con = duckdb.connect()
    con.execute(f"CREATE VIEW t AS SELECT * FROM {duck_source(job['table'])}")
    sql = job["sql"]
    if job["op"] == "preview":
        sql = f"SELECT * FROM ({sql}) LIMIT {int(job.get('limit', 20))}"
    if job["op"] in ("preview", "arrow"):
        res = con.execute(sql)
        for name in ("to_arrow_table", "fetch_arrow_table", "arrow"):   # the name changed across versions
            if hasattr(res, name):
                return getattr(res, name)().num_rows
        raise SystemExit("this duckdb cannot return Arrow tables")
    raise SystemExit(f"duckdb cannot run {job['op']}")


def run_mssql_python(job):
    import mssql_python

    if job["op"] != "load":
        raise SystemExit(f"mssql-python cannot run {job['op']}")
    import pyarrow as pa

    reader = dataset(job["table"]).scanner(batch_size=65536).to_reader()
    # UTC timestamps go to datetime2 like the other clients' (normalize_utc_datetime2): drop the zone.
    fields = [pa.field(f.name, pa.timestamp(f.type.unit), f.nullable) if pa.types.is_timestamp(f.type) and f.type.tz
              else f for f in reader.schema]
    target = pa.schema(fields)
    if target != reader.schema:
        reader = pa.RecordBatchReader.from_batches(target, (b.cast(target) for b in reader))
    conn = mssql_python.connect(job["conn"])
    cur = conn.cursor()
    cur.execute(job["ddl"])
    conn.commit()
    r = cur.bulkcopy_arrow(job["target"], reader, table_lock=True, timeout=0)
    conn.commit()
    conn.close()
    return r["rows_copied"]


ENGINES = {"deltafunnel": run_deltafunnel, "pyarrow": run_pyarrow, "deltalake": run_deltalake,
           "duckdb": run_duckdb, "mssql-python": run_mssql_python}


def main():
    job = json.loads(sys.argv[1])
    fn = ENGINES[job["engine"]]
    # Imports happen before the clock starts (to_arrow() would import pyarrow inside it).
    for mod in {"deltafunnel": ["deltafunnel"] + (["pyarrow"] if job["op"] == "arrow" else []),
                "pyarrow": ["pyarrow.dataset", "pyarrow.compute", "deltalake"],
                "deltalake": ["deltalake", "pyarrow"], "duckdb": ["duckdb", "deltalake"],
                "mssql-python": ["mssql_python", "pyarrow.dataset", "deltalake"]}[job["engine"]]:
        __import__(mod)
    t0 = time.perf_counter()
    rows = fn(job)
    print(json.dumps({"seconds": time.perf_counter() - t0, "rows": rows}), flush=True)
    # Leave without running library destructors: the measurement is done, and some peers
    # (deltalake's runtime) can abort at interpreter exit.
    os._exit(0)


if __name__ == "__main__":
    main()
