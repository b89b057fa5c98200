#!/usr/bin/env python3
"""Side-by-side benchmarks: ours, the reference deltafunnel 0.6.0 and the
peers a user would pick instead, on the same data, in the same run.

    python bench/harness.py --build BUILD --reference-python PY [--full]
                            [--only SECTION,...] [--runs N] [--work DIR]

Normally started by `bench/run`, which prepares everything first.  Writes
bench/results/latest.md (tables, ratios, every target met or not met),
bench/results/latest.json (all numbers) and bench/results/machine.json
(the machine and software the numbers come from).

Each measurement runs in a fresh process (bench/worker.py), engines
interleaved run by run, so a slow phase of the machine hits every engine;
medians are reported with their spread, and every ratio compares numbers
from this one run.  CPU seconds (user + system of the measured process)
and peak RSS come from wait4().  These machines are shared and noisy:
compare ratios, not absolute times.

Sections (default sizes fit 30 minutes on 2 cores; --full runs every size):
  datasets    deltafunnel datagen: narrow, mixed, wide (201 columns), many
              small files, a partitioned event log; snappy and zstd
  preview     LIMIT 20 with and without a selective filter
  scan        full scan: stream drain (write_all_for_stream_benchmark) and
              into Arrow, vs reference, pyarrow.dataset, deltalake, DuckDB
  load        Delta -> SQL Server peer (discard mode): ours, reference,
              mssql-python bulkcopy_arrow fed by pyarrow
  decode      Parquet decoding per encoding and codec vs pyarrow, one thread
              and all threads
  sql         SQL over the mixed table vs DuckDB and the reference
  sqlmicro    SQL engine micro-benchmarks on in-memory tables vs DuckDB
  tds         bulk encode+send into the peer (C path) vs the reference
  profiling   capture overhead (spans, 100 Hz, 1000 Hz) -> bench/diag/overhead.sh
  report      report generation time and peak RSS -> bench/report/run.sh
"""

import argparse
import datetime
import json
import os
import pathlib
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
sys.path.insert(0, str(ROOT / "tests" / "python"))

SECTIONS = ["datasets", "preview", "scan", "load", "decode", "sql", "sqlmicro", "tds", "profiling", "report"]

# ---------------------------------------------------------------------------
# Measuring


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# numpy's BLAS starts spinning threads on import; no engine here uses BLAS, and on a 2-core
# machine those threads would compete with the engines' own.
QUIET_BLAS = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def measure(python, job, env=None, timeout=3600):
    """Runs one worker job; returns seconds (inside), rows, cpu (process), rss_mb (peak)."""
    env = dict(env if env is not None else os.environ, **QUIET_BLAS)
    proc = subprocess.Popen([python, str(HERE / "worker.py"), json.dumps(job)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + timeout
    out, err = "", ""
    while True:
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"{job['engine']} {job['op']} timed out")
        time.sleep(0.005)
    out, err = proc.stdout.read(), proc.stderr.read()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{job['engine']} {job['op']} failed (exit {proc.returncode}): {err.strip()[-1500:]}")
    r = json.loads(out.strip().splitlines()[-1])
    r["cpu"] = ru.ru_utime + ru.ru_stime
    r["rss_mb"] = ru.ru_maxrss / 1024
    return r


def interleaved(cases, runs):
    """cases: [(name, python, job, env)]; runs each case `runs` times, rotating the order per run."""
    res = {name: [] for name, *_ in cases}
    errors = {}
    for r in range(runs):
        order = cases[r % len(cases):] + cases[:r % len(cases)]
        for name, python, job, env in order:
            if name in errors:
                continue
            try:
                res[name].append(measure(python, job, env))
            except Exception as e:  # one engine failing must not end the whole run
                # A crash may be a fluke of a loaded machine: retry once before giving up.
                try:
                    res[name].append(measure(python, job, env))
                except Exception:
                    errors[name] = str(e)
    return {name: summarize(v) if v else {"error": errors.get(name, "no result")} for name, v in res.items()}


def summarize(results):
    secs = [r["seconds"] for r in results]
    return {"median_s": statistics.median(secs), "min_s": min(secs), "max_s": max(secs),
            "cpu_s": statistics.median(r["cpu"] for r in results), "rss_mb": max(r["rss_mb"] for r in results),
            "rows": results[0]["rows"], "runs": len(results)}


# ---------------------------------------------------------------------------
# Result model: sections of rows, plus targets


class Results:
    def __init__(self):
        self.sections = []     # (title, note, columns, rows)
        self.targets = []      # dicts: issue, target, measured, value, limit, met
        self.raw = {}

    def table(self, title, columns, rows, note=""):
        self.sections.append((title, note, columns, rows))

    def target(self, issue, target, value, limit, higher_is_better, measured_fmt="{:.2f}", detail=""):
        if value is None:
            met = None
            measured = "not measured" + (f" ({detail})" if detail else "")
        else:
            met = value >= limit if higher_is_better else value <= limit
            measured = measured_fmt.format(value) + (f" ({detail})" if detail else "")
        self.targets.append({"issue": issue, "target": target, "measured": measured, "value": value,
                             "limit": limit, "met": met})


def ms(s):
    return f"{s * 1000:,.0f} ms" if s < 10 else f"{s:,.1f} s"


def cell(summary):
    if "error" in summary:
        return "failed"
    return f"{ms(summary['median_s'])} ({ms(summary['min_s'])}..{ms(summary['max_s'])})"


def ratio(a, b):
    """b's time / a's time (how many times faster a is), or None."""
    if not a or not b or "error" in a or "error" in b:
        return None
    return b["median_s"] / a["median_s"]


def fx(v):
    return "-" if v is None else f"{v:.2f}x"


# ---------------------------------------------------------------------------
# Datasets


def dataset_specs(full):
    """name -> (shape, rows, files, partitions, codec, row_group_rows)."""
    big = 10_000_000
    specs = {
        "mixed-snappy": ("mixed", big, 16, 0, "snappy", 0),
        "narrow-snappy": ("narrow", big, 8, 0, "snappy", 0),
        "mixed-zstd": ("mixed", big if full else 2_000_000, 16 if full else 4, 0, "zstd", 0),
        "narrow-zstd": ("narrow", big if full else 2_000_000, 8 if full else 2, 0, "zstd", 0),
        "wide-snappy": ("wide", 1_000_000 if full else 200_000, 4 if full else 2, 0, "snappy", 32768),
        "smallfiles-snappy": ("mixed", 1_000_000 if full else 200_000, 10_000 if full else 2_000, 0, "snappy", 0),
        "events-snappy": ("events", big if full else 2_000_000, 1, 100 if full else 30, "snappy", 0),
    }
    if full:
        specs.update({
            "wide-zstd": ("wide", 1_000_000, 4, 0, "zstd", 32768),
            "smallfiles-zstd": ("mixed", 1_000_000, 10_000, 0, "zstd", 0),
            "events-zstd": ("events", big, 1, 100, "zstd", 0),
        })
    return specs


def generator_signature():
    """Changes whenever the generator or the Parquet writer changes (datasets are then made anew)."""
    import hashlib

    h = hashlib.sha1()
    for rel in ("src/session/datagen.c", "src/parquet/writer.c"):
        h.update((ROOT / rel).read_bytes())
    return h.hexdigest()[:10]


def make_datasets(args, res):
    specs = dataset_specs(args.full)
    data = pathlib.Path(args.work) / "data"
    data.mkdir(parents=True, exist_ok=True)
    sig = generator_signature()
    out, rows = {}, []
    for name, (shape, n, files, parts, codec, rg) in specs.items():
        path = data / f"{name}-{n}-{files}-{parts}-{sig}"
        t0 = time.perf_counter()
        if not (path / "_delta_log").is_dir():
            shutil.rmtree(path, ignore_errors=True)
            cmd = [args.cli, "datagen", "--output", str(path), "--rows", str(n), "--shape", shape, "--files",
                   str(files), "--partitions", str(parts), "--codec", codec, "--seed", "7"]
            if rg:
                cmd += ["--row-group-rows", str(rg)]
            subprocess.run(cmd, check=True, capture_output=True)
            gen = time.perf_counter() - t0
        else:
            gen = None
        size = sum(p.stat().st_size for p in path.rglob("*.parquet"))
        nfiles = sum(1 for _ in path.rglob("*.parquet"))
        out[name] = {"path": str(path), "rows": n, "shape": shape, "codec": codec}
        rows.append([name, shape, f"{n:,}", f"{nfiles:,}", str(parts or "-"), codec, f"{size / 1e6:,.0f} MB",
                     "reused" if gen is None else f"{gen:.1f} s"])
        log(f"dataset {name}: {n:,} rows, {nfiles} files, {size / 1e6:.0f} MB")
    res.table("Datasets (deltafunnel datagen, seed 7)",
              ["dataset", "shape", "rows", "files", "partitions", "codec", "size", "generated in"], rows)
    res.raw["datasets"] = out
    return out


# ---------------------------------------------------------------------------
# Preview, scan, SQL


PREVIEW_SQL = "SELECT * FROM t"
FILTER_SQL = "SELECT * FROM t WHERE customer_id = 4242"


def section_preview(args, ds, res):
    t = ds["mixed-snappy"]["path"]
    rows, out = [], {}
    for label, sql, flt in (("LIMIT 20", PREVIEW_SQL, None),
                            ("LIMIT 20, selective filter (customer_id = 4242)", FILTER_SQL, ["customer_id", 4242])):
        cases = [("ours", args.ours_python, {"op": "preview", "engine": "deltafunnel", "table": t, "sql": sql}, None),
                 ("pyarrow", args.ours_python, {"op": "preview", "engine": "pyarrow", "table": t, "filter": flt}, None),
                 ("duckdb", args.ours_python, {"op": "preview", "engine": "duckdb", "table": t, "sql": sql}, None)]
        if args.reference_python:
            cases.insert(1, ("reference", args.reference_python,
                             {"op": "preview", "engine": "deltafunnel", "table": t, "sql": sql}, ref_env()))
        log(f"preview: {label}")
        r = interleaved(cases, args.runs + 2)
        out[label] = r
        rr = r.get("reference")
        rows.append([label, cell(r["ours"]), cell(rr) if rr else "-", cell(r["pyarrow"]), cell(r["duckdb"]),
                     fx(1 / ratio(r["ours"], rr)) if ratio(r["ours"], rr) else "-",
                     f"{r['ours'].get('rss_mb', 0):.0f} MB"])
        ref_ratio = 1 / ratio(r["ours"], rr) if ratio(r["ours"], rr) else None
        res.target("7", f"preview {label} on 10M rows: <= 0.5x the reference's latency", ref_ratio, 0.5, False,
                   "{:.2f}x", cell(r["ours"]) + " vs " + (cell(rr) if rr else "-"))
    res.table("Preview latency (mixed, 10M rows, 16 files)",
              ["case", "ours", "reference", "pyarrow", "DuckDB", "ours/reference time", "ours peak RSS"], rows,
              "Time from session creation to the formatted preview (ours and the reference), to 20 rows in Arrow "
              "(pyarrow.dataset head, DuckDB LIMIT 20); median of interleaved runs (min..max).")
    res.raw["preview"] = out
    return out


def scan_cases(args, path):
    cases = [("ours stream", args.ours_python, {"op": "stream", "engine": "deltafunnel", "table": path,
                                                "sql": PREVIEW_SQL}, None),
             ("ours arrow", args.ours_python, {"op": "arrow", "engine": "deltafunnel", "table": path,
                                               "sql": PREVIEW_SQL}, None),
             ("pyarrow", args.ours_python, {"op": "arrow", "engine": "pyarrow", "table": path}, None),
             ("deltalake", args.ours_python, {"op": "arrow", "engine": "deltalake", "table": path}, None),
             ("duckdb", args.ours_python, {"op": "arrow", "engine": "duckdb", "table": path, "sql": PREVIEW_SQL},
              None)]
    if args.reference_python:
        cases.insert(1, ("reference stream", args.reference_python,
                         {"op": "stream", "engine": "deltafunnel", "table": path, "sql": PREVIEW_SQL}, ref_env()))
    return cases


def section_scan(args, ds, res):
    rows, out = [], {}
    for name, d in ds.items():
        log(f"scan: {name}")
        r = interleaved(scan_cases(args, d["path"]), args.runs)
        out[name] = r
        ours, oa = r["ours stream"], r["ours arrow"]
        ref = r.get("reference stream")
        tput = f"{d['rows'] / ours['median_s'] / 1e6:.1f} M rows/s" if "error" not in ours else "-"
        rows.append([name, cell(ours), cell(ref) if ref else "-", fx(ratio(ours, ref)), cell(oa), cell(r["pyarrow"]),
                     fx(ratio(oa, r["pyarrow"])), cell(r["deltalake"]), cell(r["duckdb"]), fx(ratio(oa, r["duckdb"])),
                     tput, f"{ours.get('rss_mb', 0):.0f} / {oa.get('rss_mb', 0):.0f} MB"])
        if name == "mixed-snappy":
            res.target("7", "full scan/stream (mixed, 10M rows): >= 2x the reference's throughput", ratio(ours, ref),
                       2.0, True, "{:.2f}x", f"{cell(ours)} vs {cell(ref) if ref else '-'}; CPU "
                       f"{ours.get('cpu_s', 0):.2f} s vs {ref.get('cpu_s', 0) if ref else 0:.2f} s")
            res.target("7", f"full scan into Arrow (mixed, 10M rows): >= 1x pyarrow with the same thread count "
                       f"({os.cpu_count()})", ratio(oa, r["pyarrow"]), 1.0, True, "{:.2f}x",
                       f"{cell(oa)} vs {cell(r['pyarrow'])}")
    res.table("Full scan", ["dataset", "ours stream", "reference stream", "ours/ref speed", "ours to Arrow",
                            "pyarrow.dataset", "ours/pyarrow speed", "deltalake", "DuckDB", "ours/DuckDB speed",
                            "ours stream rate", "ours peak RSS (stream / arrow)"], rows,
              "Stream: `write_all_for_stream_benchmark` (both deltafunnels) drains the query's batches as a load "
              "would, without a server.  Arrow: the whole table materialised as an Arrow table (ours `to_arrow()`, "
              "pyarrow `dataset.to_table()`, deltalake `to_pyarrow_table()`, DuckDB `read_parquet(...)` fetched "
              "as Arrow); every engine uses all cores.  Speed ratios: the other engine's time / ours.")
    res.raw["scan"] = out
    return out


SQL_QUERIES = {
    "filter+project": "SELECT id, customer_id, amount * 2 AS amount2, upper(status) AS status_u, price / 3 AS p3 "
                      "FROM t WHERE quantity > 50 AND is_active AND price < 500",
    "CASE/CAST projection": "SELECT id, CASE WHEN amount > 10000 THEN 'high' WHEN amount > 1000 THEN 'mid' "
                            "ELSE 'low' END AS band, CAST(price AS DECIMAL(12, 2)) AS p2, "
                            "CAST(quantity AS DOUBLE) / 3 AS q3, CAST(order_date AS VARCHAR) AS d, "
                            "COALESCE(comment, '') AS c, CASE WHEN is_active THEN 1 ELSE 0 END AS a FROM t",
    "group by": "SELECT status, count(*) AS n, sum(amount) AS total, avg(price) AS avg_price FROM t GROUP BY status",
}


def section_sql(args, ds, res):
    t = ds["mixed-snappy"]["path"]
    rows, out = [], {}
    for label, sql in SQL_QUERIES.items():
        cases = [("ours stream", args.ours_python, {"op": "stream", "engine": "deltafunnel", "table": t, "sql": sql},
                  None),
                 ("ours arrow", args.ours_python, {"op": "arrow", "engine": "deltafunnel", "table": t, "sql": sql},
                  None),
                 ("duckdb", args.ours_python, {"op": "arrow", "engine": "duckdb", "table": t, "sql": sql}, None)]
        if args.reference_python:
            cases.insert(1, ("reference stream", args.reference_python,
                             {"op": "stream", "engine": "deltafunnel", "table": t, "sql": sql}, ref_env()))
        log(f"sql: {label}")
        r = interleaved(cases, args.runs)
        out[label] = r
        ref = r.get("reference stream")
        rows.append([label, cell(r["ours stream"]), cell(ref) if ref else "-", fx(ratio(r["ours stream"], ref)),
                     cell(r["ours arrow"]), cell(r["duckdb"]), fx(ratio(r["ours arrow"], r["duckdb"])),
                     str(r["ours arrow"].get("rows", "-"))])
    res.table("SQL over the mixed table (10M rows)",
              ["query", "ours stream", "reference stream", "ours/ref speed", "ours to Arrow", "DuckDB to Arrow",
               "ours/DuckDB speed", "result rows"], rows,
              "\n".join(f"- {k}: `{v}`" for k, v in SQL_QUERIES.items()))
    res.raw["sql"] = out


# ---------------------------------------------------------------------------
# Loads into the peer


MP_DDL = {
    "narrow": "CREATE TABLE {t} (id bigint NOT NULL, value bigint NULL, flag bit NULL)",
    "mixed": "CREATE TABLE {t} (id bigint NOT NULL, customer_id int NULL, quantity smallint NULL, "
             "amount decimal(12,2) NULL, price float NULL, order_date date NULL, updated_at datetime2(6) NULL, "
             "status nvarchar(max) NULL, comment nvarchar(max) NULL, is_active bit NULL)",
}


def section_load(args, ds, res):
    from mssql_peer import PASSWORD, USER, Peer

    os.environ["MSSQL_PEER"] = args.peer
    # The mixed table costs mssql-python about 5 s per million rows: the default suite loads the 2M-row one.
    mixed = "mixed-snappy" if args.full else "mixed-zstd"
    loads = [("narrow-snappy", ds["narrow-snappy"]), (mixed, ds[mixed])]
    rows, out = [], {}
    seq = [0]

    def target_name(prefix):
        seq[0] += 1
        return f"{prefix}_{seq[0]}"

    with Peer("--discard", max_seconds=7200) as peer:
        # Login-only encryption (Encrypt=no), the reference's default, so ours and the reference do the same work.
        cs = peer.conn_str(encrypt="no")
        mp_cs = f"Server={peer.host},{peer.port};UID={USER};PWD={PASSWORD};Database=master;Encrypt=yes;" \
                "TrustServerCertificate=yes"
        for name, d in loads:
            log(f"load: {name}")
            res_runs = {"ours": [], "reference": [], "mssql-python": []}
            errors = {}
            for r in range(args.runs):
                order = [("ours", args.ours_python, None), ("reference", args.reference_python, ref_env()),
                         ("mssql-python", args.ours_python, None)]
                order = order[r % 3:] + order[:r % 3]
                for eng, py, env in order:
                    if not py or eng in errors:
                        continue
                    if eng == "mssql-python":
                        tn = target_name("mp")
                        job = {"op": "load", "engine": "mssql-python", "table": d["path"], "conn": mp_cs,
                               "target": f"dbo.{tn}", "ddl": MP_DDL[d["shape"]].format(t=f"dbo.{tn}")}
                    else:
                        job = {"op": "load", "engine": "deltafunnel", "table": d["path"], "conn": cs,
                               "sql": PREVIEW_SQL, "target": target_name("ours" if eng == "ours" else "ref")}
                    peer0 = peer.cpu_seconds()
                    try:
                        m = measure(py, job, env)
                    except Exception as e:
                        errors[eng] = str(e)
                        continue
                    m["peer_cpu"] = peer.cpu_seconds() - peer0
                    res_runs[eng].append(m)
            r = {}
            for eng, v in res_runs.items():
                if v:
                    r[eng] = summarize(v)
                    r[eng]["peer_cpu_s"] = statistics.median(x["peer_cpu"] for x in v)
                elif eng in errors:
                    r[eng] = {"error": errors[eng]}
            out[name] = r
            ours = r.get("ours")
            ref, mp = r.get("reference"), r.get("mssql-python")
            rate = f"{d['rows'] / ours['median_s'] / 1e6:.2f} M rows/s" if ours and "error" not in ours else "-"
            rows.append([f"{name} ({d['rows']:,} rows)", cell(ours), cell(ref) if ref else "-", fx(ratio(ours, ref)),
                         cell(mp) if mp else "-", fx(ratio(ours, mp)), rate,
                         f"{ours.get('cpu_s', 0):.2f} / {ours.get('peer_cpu_s', 0):.2f} s" if ours else "-",
                         f"{ours.get('rss_mb', 0):.0f} MB" if ours else "-",
                         f"{ref.get('rss_mb', 0):.0f} MB" if ref and "error" not in ref else "-",
                         f"{mp.get('rss_mb', 0):.0f} MB" if mp and "error" not in mp else "-"])
            res.target("7/6", f"end-to-end load into the peer, {name}: >= 2x the reference", ratio(ours, ref), 2.0,
                       True, "{:.2f}x", f"{cell(ours)} vs {cell(ref) if ref else '-'}")
            res.target("7", f"end-to-end load into the peer, {name}: >= 1.5x mssql-python bulkcopy_arrow",
                       ratio(ours, mp), 1.5, True, "{:.2f}x", f"{cell(ours)} vs {cell(mp) if mp else '-'}")
            if d["rows"] >= 10_000_000 and ours and "error" not in ours:
                res.target("7/6", f"peak RSS of a streaming {d['rows'] // 1_000_000}M-row load ({name})",
                           ours["rss_mb"], 300, False, "{:.0f} MB")
    res.table("End-to-end load into the SQL Server peer (discard mode)",
              ["table", "ours", "reference", "ours/ref speed", "mssql-python", "ours/mssql-python speed",
               "ours rate", "ours CPU / peer CPU", "ours RSS", "reference RSS", "mssql-python RSS"], rows,
              "Ours and the reference: `write_to_mssql(load_mode=\"create_and_load\")` over TLS (trusted "
              "certificate), target validation off (a discarding server cannot count), UTC timestamps to "
              "datetime2.  mssql-python: CREATE TABLE, then `cursor.bulkcopy_arrow` (TABLOCK) fed by a "
              "pyarrow.dataset reader over the same files, also over TLS.  The peer decodes every row and "
              "shares the cores with the client.")
    res.raw["load"] = out


# ---------------------------------------------------------------------------
# Sub-benchmarks with their own scripts


def run_json_script(cmd, timeout=3600, env=None):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        path = f.name
    try:
        proc = subprocess.run(cmd + ["--json", path], capture_output=True, text=True, timeout=timeout, env=env)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(map(str, cmd[:2]))} failed: {(proc.stderr or proc.stdout)[-1500:]}")
        return json.loads(pathlib.Path(path).read_text()), proc.stdout
    finally:
        os.unlink(path)


def section_decode(args, res):
    log("decode: Parquet per encoding and codec")
    rows_n = 4_000_000 if args.full else 1_000_000
    data, text = run_json_script([args.ours_python, str(HERE / "parquet" / "compare.py"), "--rows", str(rows_n),
                                  "--repeat", str(max(3, args.runs)), "--build", args.build])
    rows = []
    for r in data["results"]:
        rows.append([r["file"], r["column"], f"{r['pyarrow_1t'] * 1000:.1f}", f"{r['ours_1t'] * 1000:.1f}",
                     fx(r["pyarrow_1t"] / r["ours_1t"]), f"{r['pyarrow_nt'] * 1000:.1f}", f"{r['ours_nt'] * 1000:.1f}",
                     fx(r["pyarrow_nt"] / r["ours_nt"])])
    res.table(f"Parquet decoding vs pyarrow ({rows_n:,} rows per file, best of {max(3, args.runs)})",
              ["file", "column", "pyarrow 1 thread ms", "ours 1 thread ms", "ours/pyarrow speed",
               f"pyarrow {data['threads']} threads ms", f"ours {data['threads']} threads ms", "ours/pyarrow speed"],
              rows, "Files written by pyarrow; `pq.read_table(use_threads=...)` against our reader "
                    "(bench/parquet/parquet_read_bench, row groups spread over the threads).")
    res.raw["decode"] = data


def section_sqlmicro(args, res):
    log("sqlmicro: SQL engine vs DuckDB")
    lib = pathlib.Path(args.build) / "tests" / "tools" / "libdftest.so"
    n = 5_000_000 if args.full else 2_000_000
    data, _ = run_json_script([args.ours_python, str(HERE / "sql" / "bench_sql.py"), "--rows", str(n), "--runs",
                               str(args.runs), "--lib", str(lib)])
    rows = [[q["query"], f"{q['ours_ms']:.1f}", f"{q['duckdb_ms']:.1f}", fx(q["duckdb_ms"] / q["ours_ms"])]
            for q in data["queries"]]
    rows.append(["geometric mean of ours/DuckDB time", "", "", f"{data['geomean_ratio']:.2f}"])
    res.table(f"SQL engine micro-benchmarks ({n:,} in-memory rows, {data['threads']} threads)",
              ["query", "ours ms", "DuckDB ms", "ours/DuckDB speed"], rows)
    res.raw["sqlmicro"] = data


def section_tds(args, res):
    log("tds: bulk encode+send (C path)")
    narrow, mixed = (10_000_000, 2_000_000) if args.full else (3_000_000, 1_000_000)
    cmd = [args.ours_python, str(HERE / "mssql" / "bench_mssql_load.py"), "--narrow-rows", str(narrow),
           "--mixed-rows", str(mixed), "--build", args.build, "--repeat", str(args.runs)]
    if args.reference_python:
        cmd += ["--reference-python", args.reference_python]
    data, _ = run_json_script(cmd)

    def med(runs, key):
        return statistics.median(r[key] for r in runs)

    def spread(runs):
        secs = [r["seconds"] for r in runs]
        return f"{med(runs, 'seconds'):.2f} s ({min(secs):.2f}..{max(secs):.2f})"

    rows = []
    for t in data["tables"]:
        o, r = t["ours"], t.get("reference")
        speed = statistics.median(b["seconds"] / a["seconds"] for a, b in zip(o, r)) if r else None
        cpu = statistics.median(b["cpu"] / max(a["cpu"], 1e-9) for a, b in zip(o, r)) if r else None
        secs = med(o, "seconds")
        rows.append([f"{t['name']} ({t['rows']:,} rows)", spread(o), f"{t['rows'] / secs / 1e6:.2f}",
                     f"{med(o, 'bytes') / secs / 1e6:.0f}", f"{med(o, 'cpu'):.2f} / {med(o, 'peer_cpu'):.2f}",
                     spread(r) if r else "-", f"{med(r, 'cpu'):.2f} / {med(r, 'peer_cpu'):.2f}" if r else "-",
                     fx(speed) if r else "-", fx(cpu) if r else "-"])
        res.target("5", f"TDS bulk encode+send, {t['name']}: >= 2x the reference", speed, 2.0, True, "{:.2f}x",
                   f"median of {len(o)} interleaved pairs; client CPU {cpu:.2f}x less" if r else "")
    res.table("TDS bulk load into the peer, C path (bench/mssql)",
              ["table", "ours", "M rows/s", "MB/s", "ours CPU / peer CPU s", "reference", "ref CPU / peer CPU s",
               "ours/ref speed", "client CPU ratio"], rows,
              "Ours: Delta reader -> bulk encoder -> socket in C (libdftest); reference: write_to_mssql.  Both into "
              "the same `mssql-peer --discard`, interleaved; ratios are medians of per-pair ratios.  The peer's CPU "
              "is the same work for both clients.")
    res.raw["tds"] = data


def section_profiling(args, ds, res):
    log("profiling: capture overhead (bench/diag/overhead.sh)")
    script = HERE / "diag" / "overhead.sh"
    if not script.exists():
        res.target("3", "capture overhead", None, 0, False, detail="bench/diag/overhead.sh missing")
        return
    runs = 11
    env = dict(os.environ, TMPDIR=str(pathlib.Path(args.work)))
    proc = subprocess.run(["sh", str(script), ds["mixed-snappy"]["path"], str(runs), args.build],
                          capture_output=True, text=True, timeout=3600, env=env)
    text = proc.stdout
    summ = {}
    for line in text.splitlines():
        if line.startswith("{") and '"summary"' in line:
            try:
                d = json.loads(line)
                summ[d["summary"]] = d
            except ValueError:
                pass
    instr = dict(re.findall(r"^\s*(spans|100|1000): [+-][\d,]+ instructions per preview = ([+-][\d.]+)%", text, re.M))
    steady = dict(re.findall(r"^\s*(spans|100|1000): .*\(steady [+-][\d,]+ per preview = ([+-][\d.]+)%", text, re.M))
    res.raw["profiling"] = {"stdout": text[-6000:], "returncode": proc.returncode}
    if proc.returncode != 0 or not summ:
        for m in ("spans", "100", "1000"):
            res.target("3", f"capture overhead {m}", None, 0, False,
                       detail=f"overhead.sh failed: {(proc.stderr or text)[-200:].strip()}")
        return
    rows = []
    limits = {"spans": 1.0, "100": 1.0, "1000": 3.0}
    for m in ("off", "spans", "100", "1000"):
        d = summ.get(m, {})
        wall = d.get("ratio_vs_off")
        cpu = d.get("cpu_ratio_vs_off")
        wall_pct = (wall - 1) * 100 if isinstance(wall, (int, float)) else None
        cpu_pct = (cpu - 1) * 100 if isinstance(cpu, (int, float)) else None
        pct = lambda v: "-" if v is None else f"{v:+.2f}%"   # noqa: E731
        rows.append([m, f"{d.get('median_wall_s', 0) * 1000:.0f} ms" if d else "-",
                     f"{d.get('min_wall_s', 0) * 1000:.0f}..{d.get('max_wall_s', 0) * 1000:.0f} ms" if d else "-",
                     pct(wall_pct), f"{d.get('median_cpu_s', 0):.3f} s" if d else "-", pct(cpu_pct),
                     f"{float(instr[m]):+.2f}%" if m in instr else "-",
                     f"{float(steady[m]):+.2f}%" if m in steady else "-"])
        if m in limits:
            label = "spans only" if m == "spans" else f"{m} Hz sampling"
            res.target("3", f"capture overhead, {label}: <= {limits[m]:.0f}%", cpu_pct, limits[m], False, "{:+.2f}%",
                       f"CPU time of all threads, median of {runs} interleaved 10M-row previews; wall {pct(wall_pct)}; "
                       f"instructions (callgrind, 1M rows) {pct(float(instr[m]) if m in instr else None)} per "
                       f"capture of one preview, {pct(float(steady[m]) if m in steady else None)} per further preview")
    res.table(f"Capture overhead on a 10M-row full-scan preview ({runs} interleaved runs)",
              ["mode", "median wall", "spread", "wall vs off", "median CPU", "CPU vs off",
               "instructions vs off, one-preview capture (callgrind, 1M rows)", "instructions, each further preview"],
              rows,
              "From bench/diag/overhead.sh.  Wall-time differences of several percent are this shared machine's noise; "
              "targets are judged on CPU time (user + system of every thread, the capture's collector included), "
              "which the machine's load disturbs far less.  Instruction counts are not noisy but are taken under "
              "valgrind, where CPU-time timers fire per emulated second (tens of times more samples per instruction "
              "than natively), so the sampling modes' figures are upper bounds; a one-preview capture also pays the "
              "capture's start (sampler, symbol tables), which the last column leaves out.")


def section_report(args, res):
    log("report: generation time (bench/report/run.sh)")
    script = HERE / "report" / "run.sh"
    proc = subprocess.run(["sh", str(script), args.build], capture_output=True, text=True, timeout=3600)
    text = proc.stdout
    m = re.search(r"report: ([\d.]+)s wall, peak RSS (\d+) MiB; HTML (\d+) bytes", text)
    res.raw["report"] = {"stdout": text[-3000:], "returncode": proc.returncode}
    if not m:
        res.target("4", "report generation (1M samples, 100k spans) <= 2 s", None, 2.0, False,
                   detail=(proc.stderr or text)[-200:].strip())
        return
    secs, rss, html = float(m.group(1)), int(m.group(2)), int(m.group(3))
    res.table("Report generation (1M samples, 100k spans)", ["wall", "peak RSS", "HTML size"],
              [[f"{secs:.2f} s", f"{rss} MiB", f"{html / 1e6:.1f} MB"]], "From bench/report/run.sh.")
    res.target("4", "report generation from 1M samples and 100k spans: <= 2 s", secs, 2.0, False, "{:.2f} s")
    res.target("4", "report generation peak RSS: <= 1 GB", rss, 1024, False, "{:.0f} MiB")
    res.target("4", "report HTML: <= 20 MB", html / 1e6, 20, False, "{:.1f} MB")


# ---------------------------------------------------------------------------
# Machine description and output


def ref_env():
    """The reference runs in its own virtualenv: keep our build off its path."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DFTEST_LIB")}


def pkg_version(python, mod, env=None):
    code = (f"import importlib.metadata as m\ntry:\n    print(m.version({mod!r}))\nexcept Exception:\n"
            f"    print('absent')")
    try:
        return subprocess.run([python, "-c", code], capture_output=True, text=True, env=env, timeout=60).stdout.strip()
    except Exception:
        return "unknown"


def machine(args):
    def read(path):
        try:
            return pathlib.Path(path).read_text()
        except OSError:
            return ""

    cpu = re.search(r"model name\s*:\s*(.*)", read("/proc/cpuinfo"))
    mem = re.search(r"MemTotal:\s*(\d+)", read("/proc/meminfo"))
    osr = re.search(r'PRETTY_NAME="([^"]*)"', read("/etc/os-release"))
    git = lambda *a: subprocess.run(["git", "-C", str(ROOT), *a], capture_output=True, text=True).stdout.strip()
    cc = subprocess.run(["cc", "--version"], capture_output=True, text=True).stdout.splitlines()
    return {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S"),
        "hostname": platform.node(),
        "cpu_model": cpu.group(1) if cpu else platform.processor(),
        "logical_cpus": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)),
        "memory_gb": round(int(mem.group(1)) / 1024 / 1024, 1) if mem else None,
        "os": osr.group(1) if osr else platform.platform(),
        "kernel": platform.release(),
        "load_average_start": os.getloadavg(),
        "python": platform.python_version(),
        "compiler": cc[0] if cc else "",
        "ours": {"git_commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain", "--", "src")),
                 "package": pkg_version(args.ours_python, "deltafunnel"), "build": args.build},
        "reference": pkg_version(args.reference_python, "deltafunnel", ref_env()) if args.reference_python else None,
        "peers": {m: pkg_version(args.ours_python, m) for m in ("pyarrow", "duckdb", "deltalake", "mssql-python",
                                                                 "numpy")},
        "mode": "full" if args.full else "default",
        "runs": args.runs,
    }


def portable(value, args):
    """The value with this checkout's and the work directory's absolute paths made relative
    (results are committed and compared across machines)."""
    text = json.dumps(value, default=str)
    work = str(pathlib.Path(args.work).resolve())
    for prefix, name in ((str(ROOT) + "/", ""), (work, "$DF_BENCH_WORK")):
        text = text.replace(json.dumps(prefix)[1:-1], name)
    return json.loads(text)


def write_results(args, res, mach, started):
    RESULTS.mkdir(parents=True, exist_ok=True)
    mach["load_average_end"] = os.getloadavg()
    mach["duration_s"] = round(time.time() - started, 1)
    (RESULTS / "machine.json").write_text(json.dumps(portable(mach, args), indent=2) + "\n")
    everything = {"machine": mach, "targets": res.targets, "results": res.raw}
    (RESULTS / "latest.json").write_text(json.dumps(portable(everything, args), indent=2) + "\n")
    lines = ["# Benchmark results", "",
             f"Run {mach['date_utc']} UTC, {mach['mode']} suite, {args.runs} interleaved runs per measurement, "
             f"{mach['duration_s'] / 60:.1f} minutes.", "",
             f"Machine: {mach['cpu_model']}, {mach['usable_cpus']} usable CPUs, {mach['memory_gb']} GB, "
             f"{mach['os']} (kernel {mach['kernel']}); load average {mach['load_average_start'][0]:.1f} at the "
             f"start, {mach['load_average_end'][0]:.1f} at the end (the machine is shared).  Full description: "
             "[machine.json](machine.json); every number: [latest.json](latest.json).", "",
             f"Ours: commit {mach['ours']['git_commit'][:12]}{' + working-tree changes' if mach['ours']['dirty'] else ''}; "
             f"reference: deltafunnel {mach['reference']}; peers: " +
             ", ".join(f"{k} {v}" for k, v in mach["peers"].items()) + ".", "",
             "Times are medians of interleaved runs with (min..max).  Ratios compare numbers of this run only; "
             "`x` ratios are speed ratios (the other engine's time / ours), so above 1 means ours is faster.", "",
             "## Targets", "", "| issue | target | measured | met |", "|---|---|---|---|"]
    for t in res.targets:
        met = "not measured" if t["met"] is None else ("met" if t["met"] else "**not met**")
        lines.append(f"| {t['issue']} | {t['target']} | {t['measured']} | {met} |")
    for title, note, cols, rows in res.sections:
        lines += ["", f"## {title}", ""]
        if note:
            lines += [note, ""]
        lines.append("| " + " | ".join(cols) + " |")
        lines.append("|" + "---|" * len(cols))
        for r in rows:
            lines.append("| " + " | ".join(str(c) for c in r) + " |")
    (RESULTS / "latest.md").write_text("\n".join(lines) + "\n")
    log(f"wrote {RESULTS / 'latest.md'}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="release build directory (programs, libdftest, peer)")
    ap.add_argument("--ours-python", default=sys.executable, help="a Python that imports our deltafunnel")
    ap.add_argument("--reference-python", default=os.environ.get("DF_REFERENCE_PYTHON"))
    ap.add_argument("--full", action="store_true", help="every size (takes hours)")
    ap.add_argument("--only", default="", help="comma list of sections (default: all)")
    ap.add_argument("--runs", type=int, default=0, help="interleaved runs per measurement (default 3, full 5)")
    ap.add_argument("--work", default=os.environ.get("DF_BENCH_WORK", "/tmp/df-bench"),
                    help="where datasets are generated (reused between runs)")
    args = ap.parse_args()
    args.runs = args.runs or (5 if args.full else 3)
    args.build = str(pathlib.Path(args.build).resolve())
    args.cli = str(pathlib.Path(args.build) / "programs" / "deltafunnel")
    args.peer = str(pathlib.Path(args.build) / "programs" / "mssql-peer" / "mssql-peer")
    only = [s for s in args.only.split(",") if s] or SECTIONS
    unknown = set(only) - set(SECTIONS)
    if unknown:
        ap.error(f"unknown sections: {', '.join(sorted(unknown))}")
    if not args.reference_python:
        log("note: no reference Python (--reference-python / DF_REFERENCE_PYTHON): reference columns stay empty")
    started = time.time()
    res = Results()
    mach = machine(args)
    log(f"machine: {mach['cpu_model']}, {mach['usable_cpus']} CPUs, load {mach['load_average_start'][0]:.1f}")
    need_data = {"preview", "scan", "load", "sql", "profiling"} & set(only)
    ds = make_datasets(args, res) if need_data or "datasets" in only else {}
    steps = [("preview", lambda: section_preview(args, ds, res)), ("scan", lambda: section_scan(args, ds, res)),
             ("sql", lambda: section_sql(args, ds, res)), ("load", lambda: section_load(args, ds, res)),
             ("decode", lambda: section_decode(args, res)), ("sqlmicro", lambda: section_sqlmicro(args, res)),
             ("tds", lambda: section_tds(args, res)), ("profiling", lambda: section_profiling(args, ds, res)),
             ("report", lambda: section_report(args, res))]
    for name, fn in steps:
        if name not in only:
            continue
        try:
            fn()
        except Exception as e:  # a broken section is reported, the others still run
            log(f"section {name} failed: {e}")
            res.table(f"{name}: failed", ["error"], [[str(e)[-500:].replace("|", "/").replace("\n", " ")]])
        write_results(args, res, mach, started)   # partial results survive an interruption
    if "preview" in only and "scan" in only:
        p = res.raw["preview"]["LIMIT 20"]["ours"]
        s = res.raw["scan"]["mixed-snappy"]["ours stream"]
        if "error" not in p and "error" not in s:
            res.target("2", "record: ours preview LIMIT 20 / ours full scan time (10M rows)",
                       p["median_s"] / s["median_s"], 1.0, False, "{:.3f}")
    write_results(args, res, mach, started)


if __name__ == "__main__":
    main()
