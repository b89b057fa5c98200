"""Preview and full-scan time over one Delta table: ours, the reference
deltafunnel 0.6.0 and pyarrow, measured in one run, reported as ratios.

Full scans are measured two ways: draining the query stream
(`write_all_for_stream_benchmark`, which both deltafunnels have) and
materialising an Arrow table (ours with `to_arrow()`, pyarrow with
`dataset.to_table()`; the reference has no Arrow export).

    python bench/preview_scan.py [--rows 10000000] [--runs 5] [--table DIR]
                                 [--reference-python PATH]

Each measurement runs in a fresh process (so caches of one engine do not
help another), runs are interleaved engine by engine, and the median is
reported with the spread.  The table is generated with `deltafunnel
datagen` unless --table names an existing one.  The reference runs from its
own virtualenv (its import name is the same as ours): pass its python with
--reference-python or set DF_REFERENCE_PYTHON; without it the reference
columns are left out and the script says so.

Absolute times on a shared machine mean little; compare the ratios.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap

PREVIEW_SQL = "SELECT * FROM t"
FILTER_SQL = "SELECT * FROM t WHERE customer_id = 4242"

# Each snippet prints one JSON object {"seconds": float, "rows": int}.
STREAM_SCAN = """
        import time, deltafunnel as d
        t0 = time.perf_counter()
        # The stream benchmark plans a SQL Server target but never connects.
        s = d.Session(default_mssql_connection_string="Server=tcp:127.0.0.1,1;User Id=u;Password=p",
                      schema_options={"timezone_policy": "normalize_utc_datetime2"})
        t = s.delta_lake(TABLE, name="t")
        spec = s.table_from_sql("SELECT * FROM t").to_mssql(schema="dbo", table="bench", load_mode="create_and_load")
        r = s.write_all_for_stream_benchmark([spec], options={"cache_mode": "disabled"})
        rows = r["workflow"]["outputs"][0]["output_row_count"]["value"]
        print(json.dumps({"seconds": time.perf_counter() - t0, "rows": rows}))
"""

OURS = {
    "preview": """
        import time, deltafunnel as d
        t0 = time.perf_counter()
        s = d.Session()
        s.delta_lake(TABLE, name="t")
        p = s.table_from_sql(SQL).preview(20)
        rows = len(p.text.splitlines()) - 4
        print(json.dumps({"seconds": time.perf_counter() - t0, "rows": rows}))
    """,
    "scan": STREAM_SCAN,
    "arrow": """
        import time, deltafunnel as d
        t0 = time.perf_counter()
        s = d.Session()
        s.delta_lake(TABLE, name="t")
        tbl = s.table_from_sql("SELECT * FROM t").to_arrow()
        print(json.dumps({"seconds": time.perf_counter() - t0, "rows": tbl.num_rows}))
    """,
}

REFERENCE = {
    "preview": OURS["preview"],
    "scan": STREAM_SCAN,
}

PYARROW = {
    "preview": """
        import time, pyarrow.dataset as ds, deltalake
        t0 = time.perf_counter()
        files = deltalake.DeltaTable(TABLE).file_uris()
        tbl = ds.dataset(files, format="parquet").head(20)
        print(json.dumps({"seconds": time.perf_counter() - t0, "rows": tbl.num_rows}))
    """,
    "arrow": """
        import time, pyarrow.dataset as ds, deltalake
        t0 = time.perf_counter()
        files = deltalake.DeltaTable(TABLE).file_uris()
        tbl = ds.dataset(files, format="parquet").to_table()
        print(json.dumps({"seconds": time.perf_counter() - t0, "rows": tbl.num_rows}))
    """,
}


def run_snippet(name, python, snippet, table, sql):
    code = "import json\nTABLE = %r\nSQL = %r\n" % (table, sql) + textwrap.dedent(snippet)
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=3600)
    if out.returncode != 0:
        raise RuntimeError(f"{name} failed (exit {out.returncode}): " + out.stderr.strip()[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--files", type=int, default=16)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--table")
    ap.add_argument("--reference-python", default=os.environ.get("DF_REFERENCE_PYTHON"))
    ap.add_argument("--json", help="also write the results as JSON to this path")
    args = ap.parse_args()

    tmp = None
    table = args.table
    if not table:
        tmp = tempfile.mkdtemp(prefix="df-bench-")
        table = os.path.join(tmp, "t")
        gen = shutil.which("deltafunnel") or "deltafunnel"
        subprocess.run([gen, "datagen", "--output", table, "--rows", str(args.rows),
                        "--files", str(args.files), "--seed", "7", "--codec", "snappy"], check=True)

    engines = [("ours", sys.executable, OURS), ("pyarrow", sys.executable, PYARROW)]
    if args.reference_python:
        engines.insert(1, ("reference", args.reference_python, REFERENCE))
    else:
        print("note: no --reference-python given; the reference is not measured", file=sys.stderr)

    cases = [("preview LIMIT 20", "preview", PREVIEW_SQL),
             ("preview LIMIT 20, selective filter", "preview", FILTER_SQL),
             ("full scan (stream drain)", "scan", PREVIEW_SQL),
             ("full scan into an Arrow table", "arrow", PREVIEW_SQL)]
    results = {}
    try:
        for label, kind, sql in cases:
            for run in range(args.runs):
                for name, python, snippets in engines:
                    if kind not in snippets or (label.endswith("filter") and name == "pyarrow"):
                        continue
                    r = run_snippet(name, python, snippets[kind], table, sql)
                    results.setdefault(label, {}).setdefault(name, []).append(r["seconds"])
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)

    print(f"table: {args.rows} rows, {args.files} files; {args.runs} interleaved runs; medians (min..max)")
    report = {}
    for label, per in results.items():
        ours = statistics.median(per["ours"])
        line = [f"{label:<38}"]
        for name, times in per.items():
            med = statistics.median(times)
            line.append(f"{name} {med * 1000:8.1f} ms ({min(times) * 1000:.1f}..{max(times) * 1000:.1f})")
            report.setdefault(label, {})[name] = {"median_s": med, "min_s": min(times), "max_s": max(times)}
        for name, times in per.items():
            if name != "ours":
                line.append(f"ours/{name} time ratio {ours / statistics.median(times):.2f}")
        print("  ".join(line))
    if "preview LIMIT 20" in results and "full scan (stream drain)" in results:
        ratio = statistics.median(results["preview LIMIT 20"]["ours"]) / \
            statistics.median(results["full scan (stream drain)"]["ours"])
        print(f"ours: preview LIMIT 20 takes {ratio:.3f} of a full scan's time")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": args.rows, "files": args.files, "runs": args.runs, "results": report}, f, indent=2)


if __name__ == "__main__":
    main()
