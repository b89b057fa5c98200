#!/usr/bin/env python3
"""End-to-end Delta -> SQL Server rows/s: ours vs the reference deltafunnel 0.6.

For each table (generated once by `deltafunnel datagen`: `narrow` = id
bigint NOT NULL, value bigint, flag bool; `mixed` = ids, quantities, decimal(12,2),
doubles, dates, timestamps, strings), both packages run the same script in
their own Python process against the same `mssql-peer --discard` (rows are
decoded and counted, not stored, so the server side costs the same for
both): create a Session, register the Delta table, and
`write_to_mssql(load_mode="create_and_load")` with target validation
disabled (a discarding server cannot count rows) and UTC timestamps
normalized to datetime2.  Timed from Session
creation to the returned report; peak RSS from getrusage.  With --repeat N
the two clients alternate N times per table (ours, reference, ours, ...)
and the medians, the spread and the median of the per-pair ratios are
printed: the machines are noisy, compare the ratios.

Usage: bench_write.py [--narrow-rows N] [--mixed-rows N] [--build DIR]
           [--reference-python PY] [--ours-python PY] [--repeat N] [--only SHAPE]
  --build             build directory with programs/deltafunnel and programs/mssql-peer
                      (a release or debugoptimized build: a sanitizer build measures the sanitizer)
  --reference-python  a Python with deltafunnel==0.6.0 (env DF_REFERENCE_PYTHON)
  --ours-python       a Python that imports our deltafunnel (default: this one; set PYTHONPATH
                      for an uninstalled build)
"""

import argparse
import json
import statistics
import os
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "tests" / "python"))

from mssql_peer import Peer  # noqa: E402

SCRIPT = r"""
import json, resource, sys, time
import deltafunnel
uri, table, cs = sys.argv[1], sys.argv[2], sys.argv[3]
t0 = time.perf_counter()
s = deltafunnel.Session(default_mssql_connection_string=cs,
                        validation_options={"target_validation_mode": "disabled"},
                        schema_options={"timezone_policy": "normalize_utc_datetime2"})
t = s.delta_lake(uri, name="src")
r = t.write_to_mssql(schema="dbo", table=table, load_mode="create_and_load")
t1 = time.perf_counter()
ru = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"seconds": t1 - t0, "rows": r["write_stats"]["rows_written"],
                  "cpu": ru.ru_utime + ru.ru_stime, "rss_mb": ru.ru_maxrss / 1024}))
"""


def run(python, uri, table, cs, env=None):
    proc = subprocess.run([python, "-c", SCRIPT, str(uri), table, cs], capture_output=True, text=True, timeout=3600,
                          env=env)
    if proc.returncode != 0:
        raise SystemExit(f"{python} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--narrow-rows", type=int, default=10_000_000)
    ap.add_argument("--mixed-rows", type=int, default=2_000_000)
    ap.add_argument("--build", default=os.environ.get("DF_BENCH_BUILD", str(ROOT / "build-release")))
    ap.add_argument("--reference-python", default=os.environ.get("DF_REFERENCE_PYTHON"))
    ap.add_argument("--ours-python", default=sys.executable)
    ap.add_argument("--repeat", type=int, default=1, help="interleaved runs per client and table")
    ap.add_argument("--only", choices=("narrow", "mixed"), help="run one table only")
    args = ap.parse_args()
    if not args.reference_python:
        raise SystemExit("--reference-python (or DF_REFERENCE_PYTHON) must name a Python with deltafunnel==0.6.0")
    build = pathlib.Path(args.build)
    cli, peer_bin = build / "programs" / "deltafunnel", build / "programs" / "mssql-peer" / "mssql-peer"
    os.environ["MSSQL_PEER"] = str(peer_bin)
    with tempfile.TemporaryDirectory(prefix="bench-write-") as tmp:
        tables = []
        for shape, rows in (("narrow", args.narrow_rows), ("mixed", args.mixed_rows)):
            if args.only and shape != args.only:
                continue
            path = pathlib.Path(tmp) / shape
            subprocess.run([str(cli), "datagen", "--output", str(path), "--rows", str(rows), "--shape", shape,
                            "--files", "4", "--codec", "snappy"], check=True, capture_output=True)
            tables.append((shape, rows, path))
        with Peer("--discard", max_seconds=3600) as peer:
            cs = peer.conn_str(encrypt="no")  # login-only, the reference's default: both do the same work
            clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the reference's own package
            for shape, rows, path in tables:
                runs = {"ours": [], "reference": []}
                for i in range(args.repeat):
                    # Alternate which client goes first so drift in the machine's load hits both alike.
                    order = ("ours", "reference") if i % 2 == 0 else ("reference", "ours")
                    for who in order:
                        r = (run(args.ours_python, path, f"ours_{shape}_{i}", cs) if who == "ours" else
                             run(args.reference_python, path, f"ref_{shape}_{i}", cs, env=clean))
                        assert r["rows"] == rows, (who, r["rows"], rows)
                        runs[who].append(r)
                report(shape, rows, runs)


def report(shape, rows, runs):
    """Prints medians (min..max) per client and the median of the per-pair throughput ratios."""
    print(f"{shape}: {rows:,} rows, {len(runs['ours'])} interleaved run(s) each")
    for name in ("ours", "reference"):
        secs = [r["seconds"] for r in runs[name]]
        med = statistics.median(secs)
        print(f"  {name:<10} {med:7.2f} s ({min(secs):.2f}..{max(secs):.2f})  {rows / med:>13,.0f} rows/s  "
              f"cpu {statistics.median(r['cpu'] for r in runs[name]):6.2f} s  "
              f"peak RSS {max(r['rss_mb'] for r in runs[name]):6.0f} MB")
    ratios = [b["seconds"] / a["seconds"] for a, b in zip(runs["ours"], runs["reference"])]
    cpu = [b["cpu"] / max(a["cpu"], 1e-9) for a, b in zip(runs["ours"], runs["reference"])]
    print(f"  ratio      ours/reference throughput median {statistics.median(ratios):.2f}x "
          f"({min(ratios):.2f}..{max(ratios):.2f}), CPU {statistics.median(cpu):.2f}x less")

if __name__ == "__main__":
    main()
