"""Side-by-side Parquet read benchmark: our reader against pyarrow.

Generates deterministic data sets (seeded), writes them with pyarrow (one
file per codec and encoding choice), then times
pyarrow.parquet.read_table(use_threads=False / True) and our reader
(parquet_read_bench, built from this checkout) with one thread and with
all threads on the same files in the same run, and prints best-of-N times
and the ratio ours / pyarrow (below 1.0 = we are faster).  Not a test:
machines are noisy, so only ratios measured in one run mean anything.

    python bench/parquet/compare.py [--rows N] [--repeat R] [--keep DIR]
                                    [--build DIR] [--threads T] [--json PATH]

--build links the benchmark against a meson build's libdeltafunnel_core.a
(release builds measure what users get); without it the sources are
compiled here with -O2.
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = pathlib.Path(__file__).resolve().parents[2]
LIBS = ["-lz", "-lzstd", "-llz4", "-lbrotlidec", "-lbrotlienc", "-lsnappy", "-lm", "-lpthread"]


def build_bench(out, build=None):
    """Compiles parquet_read_bench with the release flags the library uses."""
    flags = ["cc", "-std=c11", "-D_GNU_SOURCE", "-O2", "-fno-omit-frame-pointer", "-Iinclude", "-Isrc"]
    if build:
        core = pathlib.Path(build) / "libdeltafunnel_core.a"
        cmd = flags + ["bench/parquet/parquet_read_bench.c", str(core)] + LIBS + ["-o", str(out)]
    else:
        srcs = ["bench/parquet/parquet_read_bench.c"]
        for d in ["src/common", "src/columnar", "src/storage", "src/parquet"]:
            srcs += sorted(str(p.relative_to(ROOT)) for p in (ROOT / d).glob("*.c"))
        cmd = flags + srcs + LIBS + ["-o", str(out)]
    subprocess.run(cmd, cwd=ROOT, check=True)


def datasets(n, rng):
    ints = rng.integers(0, 1 << 40, n)
    small = rng.integers(0, 1000, n).astype("int32")
    nulls = rng.random(n) < 0.1
    words = np.array(["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"])
    flat = pa.table({
        "i64": pa.array(ints),
        "i32_nulls": pa.array(small, mask=nulls),
        "f64": pa.array(rng.random(n)),
        "str_dict": pa.array(words[rng.integers(0, len(words), n)]),
        "str_plain": pa.array([f"value-{v}" for v in rng.integers(0, 1 << 30, n)]),
        "bool": pa.array(rng.random(n) < 0.5),
        "ts": pa.array(ints * 1000, pa.timestamp("us", tz="UTC")),
        "dec": pa.array([int(v) for v in ints % 10_000_000], pa.decimal128(18, 0)),
    })
    m = n // 4
    nested = pa.table({
        "ids": pa.array([list(range(i % 5)) for i in range(m)], pa.list_(pa.int64())),
        "s": pa.array([{"a": i, "b": f"x{i % 100}"} for i in range(m)],
                      pa.struct([("a", pa.int64()), ("b", pa.string())])),
        "m": pa.array([[("k", i), ("j", i + 1)] for i in range(m)], pa.map_(pa.string(), pa.int64())),
    })
    return {
        "flat_snappy": (flat, {"compression": "snappy"}),
        "flat_zstd": (flat, {"compression": "zstd"}),
        "flat_none": (flat, {"compression": "none"}),
        "flat_plain_v2": (flat, {"compression": "snappy", "use_dictionary": False, "data_page_version": "2.0"}),
        "flat_delta": (flat, {"compression": "snappy", "use_dictionary": False,
                              "column_encoding": {"i64": "DELTA_BINARY_PACKED", "i32_nulls": "DELTA_BINARY_PACKED",
                                                  "str_plain": "DELTA_BYTE_ARRAY", "str_dict": "DELTA_LENGTH_BYTE_ARRAY",
                                                  "f64": "BYTE_STREAM_SPLIT"}}),
        "nested_snappy": (nested, {"compression": "snappy"}),
    }


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def ours(bench, path, repeat, columns=None, threads=1):
    args = [str(bench), str(path), str(repeat), "8192", columns or "-", str(threads)]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return float(out.split("best=")[1].split()[0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--keep", help="directory to keep the generated files in")
    ap.add_argument("--build", help="meson build directory with libdeltafunnel_core.a")
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--json", help="also write the results as JSON here")
    args = ap.parse_args()
    work = pathlib.Path(args.keep or tempfile.mkdtemp(prefix="dfpqbench"))
    work.mkdir(parents=True, exist_ok=True)
    bench = work / "parquet_read_bench"
    build_bench(bench, args.build)
    rng = np.random.default_rng(42)
    results = []
    print(f"{'file':<16} {'column':<10} {'pyarrow 1t':>10} {'ours 1t':>10} {'ratio':>6} "
          f"{f'pyarrow {args.threads}t':>11} {f'ours {args.threads}t':>9} {'ratio':>6}")
    for name, (table, kw) in datasets(args.rows, rng).items():
        path = work / f"{name}.parquet"
        pq.write_table(table, path, row_group_size=1 << 20, **kw)
        cols = [None] + (table.column_names if name == "flat_snappy" else [])
        for col in cols:
            sel = [col] if col else None
            r = {"file": name, "column": col or "(all)",
                 "pyarrow_1t": best(lambda: pq.read_table(path, columns=sel, use_threads=False), args.repeat),
                 "ours_1t": ours(bench, path, args.repeat, col),
                 "pyarrow_nt": best(lambda: pq.read_table(path, columns=sel, use_threads=True), args.repeat),
                 "ours_nt": ours(bench, path, args.repeat, col, args.threads)}
            results.append(r)
            print(f"{name:<16} {r['column']:<10} {r['pyarrow_1t']:>10.4f} {r['ours_1t']:>10.4f} "
                  f"{r['ours_1t'] / r['pyarrow_1t']:>6.2f} {r['pyarrow_nt']:>11.4f} {r['ours_nt']:>9.4f} "
                  f"{r['ours_nt'] / r['pyarrow_nt']:>6.2f}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"rows": args.rows, "threads": args.threads,
                                                       "repeat": args.repeat, "results": results}, indent=2))
    if not args.keep:
        for p in work.iterdir():
            p.unlink()
        work.rmdir()


if __name__ == "__main__":
    sys.exit(main())
