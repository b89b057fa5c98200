"""Interleaved full-scan / preview ratios of several builds in one run.

    python bench/parquet/scan_ratio.py --engine NAME=PYTHON[:PYTHONPATH[:VAR=VALUE]] ...
        [--op stream|arrow|preview] [--sql SQL] [--runs 5] TABLE_DIR ...

Every engine is a Python interpreter (and optionally a PYTHONPATH that
puts a build of our package first, and one environment variable), so two
builds of ours and the reference deltafunnel 0.6.0 (from its own
virtualenv) can be compared in one run.  Each measurement is one fresh process running bench/worker.py;
runs are interleaved engine by engine (run 1 of every engine, then run 2,
...), so load changes on a shared machine hit every engine alike.  The
script prints, per table, each engine's median wall time with the spread
(min..max), its median CPU time (user + system of the child, from
wait4), and each engine's median time divided by the first engine's
(above 1: the first engine is that many times faster).

`pyarrow` and `duckdb` are accepted as engine names too (then the
PYTHON runs worker.py's engine of that name, e.g. pyarrow.dataset
to_table for --op arrow).
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess

HERE = pathlib.Path(__file__).resolve().parent
WORKER = HERE.parent / "worker.py"


def run_one(python, pythonpath, job):
    """Runs one job in a fresh process; returns (wall seconds of the operation, CPU seconds of the process, rows)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DFTEST_LIB")}
    pythonpath, _, extra = pythonpath.partition(":")
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    if extra:
        key, _, value = extra.partition("=")
        env[key] = value
    proc = subprocess.Popen([python, str(WORKER), json.dumps(job)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env)
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, ru = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"{python} failed on {job}: {err.decode(errors='replace')[-2000:]}")
    res = json.loads(out.decode().strip().splitlines()[-1])
    return res["seconds"], ru.ru_utime + ru.ru_stime, res["rows"]


def parse_engine(spec):
    name, _, rest = spec.partition("=")
    python, _, pythonpath = rest.partition(":")
    return name, python, pythonpath


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engine", action="append", required=True, help="NAME=PYTHON[:PYTHONPATH]; the first is the base")
    ap.add_argument("--op", default="stream", choices=["stream", "arrow", "preview"])
    ap.add_argument("--sql", default="SELECT * FROM t")
    ap.add_argument("--limit", type=int, default=20)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", help="also write every measurement here")
    ap.add_argument("tables", nargs="+")
    args = ap.parse_args()
    engines = [parse_engine(e) for e in args.engine]
    report = {}
    for table in args.tables:
        times = {name: [] for name, _, _ in engines}
        cpus = {name: [] for name, _, _ in engines}
        rows = {}
        for r in range(args.runs):
            for name, python, pythonpath in engines:
                eng = name if name in ("pyarrow", "duckdb", "deltalake") else "deltafunnel"
                job = {"op": args.op, "engine": eng, "table": table, "sql": args.sql, "limit": args.limit}
                wall, cpu, n = run_one(python, pythonpath, job)
                times[name].append(wall)
                cpus[name].append(cpu)
                rows[name] = n
        base = engines[0][0]
        print(f"\n{os.path.basename(table.rstrip('/'))}  op={args.op}  runs={args.runs}  "
              f"load={os.getloadavg()[0]:.1f}")
        bmed = statistics.median(times[base])
        for name, _, _ in engines:
            med = statistics.median(times[name])
            print(f"  {name:14s} {med * 1000:8.1f} ms ({min(times[name]) * 1000:.1f}..{max(times[name]) * 1000:.1f})"
                  f"  cpu {statistics.median(cpus[name]):.3f} s  rows {rows[name]}"
                  f"  time / {base}: {med / bmed:.2f}")
        report[table] = {"times": times, "cpus": cpus, "rows": rows}
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
