"""SQL engine micro-benchmark: filter + project, group by, join, sort + limit
over in-memory tables, ours against DuckDB, reported as ratios.

    python bench/sql/bench_sql.py [--rows 5000000] [--threads N] [--runs 5]
                                  [--lib build/tests/tools/libdftest.so]

Both engines read the same Arrow tables (generated deterministically from a
fixed seed), use the same number of threads, and return their result as
Arrow.  Each query runs once to warm up, then `--runs` times per engine,
interleaved; the median is reported.  Absolute times on a shared machine
mean little: compare the ratios (ours / DuckDB, lower is better).  Build the
library in release mode (meson -Dbuildtype=release) before measuring.
"""

import argparse
import ctypes
import os
import pathlib
import statistics
import sys
import time

import duckdb
import numpy as np
import pyarrow as pa

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from dfhelpers import arrow_stream_from_c  # noqa: E402

QUERIES = {
    "filter_project": "SELECT id, v * 2 + 1 AS w, upper(s) AS u, d * 3 AS dd FROM fact WHERE v > 0.25 AND k < 600",
    "filter_count": "SELECT count(*) FROM fact WHERE v BETWEEN 0.1 AND 0.2 AND s LIKE 'x1%'",
    "group_by": "SELECT k, count(*), sum(v), avg(v), min(s), max(d) FROM fact GROUP BY k",
    "group_by_string": "SELECT s, count(*), sum(id) FROM fact GROUP BY s",
    "join": "SELECT count(*), sum(f.v) FROM fact f JOIN dim d ON f.k = d.k WHERE d.flag",
    "join_group": "SELECT d.name, count(*) FROM fact f JOIN dim d ON f.k = d.k GROUP BY d.name",
    "sort_limit": "SELECT id, v, s FROM fact ORDER BY v DESC, id LIMIT 100",
}


def generate(rows, seed=42):
    rng = np.random.default_rng(seed)
    k = rng.integers(0, 1000, rows, dtype=np.int32)
    v = rng.random(rows)
    s_codes = rng.integers(0, 200, rows)
    words = np.array([f"x{i}y" for i in range(200)], dtype=object)
    d = rng.integers(-1_000_000, 1_000_000, rows)
    fact = pa.table({
        "id": pa.array(np.arange(rows, dtype=np.int64)),
        "k": pa.array(k),
        "v": pa.array(v),
        "s": pa.array(words[s_codes].tolist(), pa.string()),
        "d": pa.array(d).cast(pa.decimal128(19, 0)).cast(pa.decimal128(12, 0)).cast(pa.decimal128(12, 2)),
    })
    dim = pa.table({
        "k": pa.array(np.arange(1000, dtype=np.int32)),
        "name": pa.array([f"n{i % 37}" for i in range(1000)], pa.string()),
        "flag": pa.array([(i % 3) == 0 for i in range(1000)], pa.bool_()),
    })
    return fact, dim


class Ours:
    def __init__(self, lib_path, threads):
        self.lib = ctypes.CDLL(lib_path)
        lib = self.lib
        lib.dfsql_catalog_new.restype = ctypes.c_void_p
        lib.dfsql_register_stream.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_char_p,
                                              ctypes.c_size_t]
        lib.dfsql_query.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p,
                                    ctypes.c_char_p, ctypes.c_size_t]
        self.cat = lib.dfsql_catalog_new()
        self.threads = threads

    def register(self, name, table, chunk):
        from pyarrow.cffi import ffi
        stream = ffi.new("struct ArrowArrayStream*")
        addr = int(ffi.cast("uintptr_t", stream))
        pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=chunk))._export_to_c(addr)
        err = ctypes.create_string_buffer(1024)
        if self.lib.dfsql_register_stream(ctypes.c_void_p(self.cat), name.encode(), ctypes.c_void_p(addr), err, 1024):
            raise RuntimeError(err.value)

    def run(self, sql):
        return arrow_stream_from_c(self.lib.dfsql_query, ctypes.c_void_p(self.cat), sql.encode(), self.threads,
                                   0).read_all()


def default_lib():
    for cand in sorted(ROOT.glob("build*/tests/tools/libdftest.so")):
        if "rel" in cand.parent.parent.parent.name:
            return str(cand)
    return os.environ.get("DFTEST_LIB", "")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--lib", default=os.environ.get("DFTEST_LIB") or default_lib())
    ap.add_argument("--only", default="")
    ap.add_argument("--json", help="also write the results as JSON here")
    args = ap.parse_args()
    fact, dim = generate(args.rows)
    ours = Ours(args.lib, args.threads)
    ours.register("fact", fact, 256 * 1024)
    ours.register("dim", dim, 1000)
    con = duckdb.connect()
    con.execute(f"SET threads = {args.threads}")
    con.register("fact", fact)
    con.register("dim", dim)
    print(f"rows={args.rows} threads={args.threads} runs={args.runs} lib={args.lib}")
    print(f"{'query':18s} {'ours ms':>10s} {'duckdb ms':>10s} {'ratio':>7s}  rows")
    ratios = []
    report = []
    for name, sql in QUERIES.items():
        if args.only and name not in args.only.split(","):
            continue
        a = ours.run(sql)
        b = con.execute(sql).to_arrow_table()
        if a.num_rows != b.num_rows:
            print(f"{name}: row counts differ ({a.num_rows} vs {b.num_rows})")
        t_ours, t_duck = [], []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            ours.run(sql)
            t_ours.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            con.execute(sql).to_arrow_table()
            t_duck.append(time.perf_counter() - t0)
        mo, md = statistics.median(t_ours), statistics.median(t_duck)
        ratios.append(mo / md)
        report.append({"query": name, "ours_ms": mo * 1e3, "duckdb_ms": md * 1e3, "rows": a.num_rows})
        print(f"{name:18s} {mo * 1e3:10.1f} {md * 1e3:10.1f} {mo / md:7.2f}  {a.num_rows}")
    geo = float(np.exp(np.mean(np.log(ratios)))) if ratios else None
    if ratios:
        print(f"{'geometric mean':18s} {'':10s} {'':10s} {geo:7.2f}")
    if args.json:
        import json
        with open(args.json, "w") as f:
            json.dump({"rows": args.rows, "threads": args.threads, "runs": args.runs, "queries": report,
                       "geomean_ratio": geo}, f, indent=2)


if __name__ == "__main__":
    main()
