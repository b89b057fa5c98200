"""Side-by-side Parquet read benchmark: our reader against pyarrow.

Generates deterministic data sets (seeded), writes them with pyarrow, then
times pyarrow.parquet.read_table(use_threads=False) and our reader
(parquet_read_bench, built from this checkout by `build_bench`) on the same
files in the same run, and prints best-of-N times and the ratio
ours / pyarrow (below 1.0 = we are faster).  Not a test: machines are noisy,
so only ratios measured in one run mean anything.

    python bench/parquet/compare.py [--rows N] [--repeat R] [--keep DIR]
"""

import argparse
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


def build_bench(out):
    """Compiles parquet_read_bench with the release flags the library uses."""
    srcs = ["bench/parquet/parquet_read_bench.c"]
    for d in ["src/common", "src/columnar", "src/storage", "src/parquet"]:
        srcs += sorted(str(p.relative_to(ROOT)) for p in (ROOT / d).glob("*.c"))
    cmd = ["cc", "-std=c11", "-D_GNU_SOURCE", "-O2", "-fno-omit-frame-pointer", "-Iinclude", "-Isrc", *srcs,
           "-lz", "-lzstd", "-llz4", "-lbrotlidec", "-lbrotlienc", "-lsnappy", "-lm", "-lpthread", "-o", str(out)]
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
        "nested_snappy": (nested, {"compression": "snappy"}),
    }


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def ours(bench, path, repeat, columns=None):
    args = [str(bench), str(path), str(repeat), "8192"] + ([columns] if columns else [])
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return float(out.split("best=")[1].split()[0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--keep", help="directory to keep the generated files in")
    args = ap.parse_args()
    work = pathlib.Path(args.keep or tempfile.mkdtemp(prefix="dfpqbench"))
    work.mkdir(parents=True, exist_ok=True)
    bench = work / "parquet_read_bench"
    build_bench(bench)
    rng = np.random.default_rng(42)
    print(f"{'file':<16} {'column':<10} {'pyarrow s':>10} {'ours s':>10} {'ratio':>6}")
    for name, (table, kw) in datasets(args.rows, rng).items():
        path = work / f"{name}.parquet"
        pq.write_table(table, path, row_group_size=1 << 20, **kw)
        t_pa = best(lambda: pq.read_table(path, use_threads=False), args.repeat)
        t_us = ours(bench, path, args.repeat)
        print(f"{name:<16} {'(all)':<10} {t_pa:>10.4f} {t_us:>10.4f} {t_us / t_pa:>6.2f}")
        if name == "flat_snappy":
            for col in table.column_names:
                t_pa = best(lambda: pq.read_table(path, columns=[col], use_threads=False), args.repeat)
                t_us = ours(bench, path, args.repeat, col)
                print(f"{'':<16} {col:<10} {t_pa:>10.4f} {t_us:>10.4f} {t_us / t_pa:>6.2f}")
    if not args.keep:
        for p in work.iterdir():
            p.unlink()
        work.rmdir()


if __name__ == "__main__":
    sys.exit(main())
