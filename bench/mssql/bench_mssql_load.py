#!/usr/bin/env python3
"""Bulk-load throughput into the loopback peer's discard mode: ours vs the
reference deltafunnel 0.6.

Two deterministic Delta tables are generated with the `deltalake` package:
  narrow  id bigint, qty int, price double, flag bool          (numeric only)
  mixed   name/city strings, amount decimal(18,4), ts timestamp, code int,
          note nullable string
Each is loaded into one `mssql-peer --discard` (rows decoded and counted,
not stored) by:
  ours       our Delta reader (libdftest dftest_delta_read) streaming Arrow
             batches straight into our bulk encoder (dftest_mssql_bulk_load);
             both in C, one process;
  reference  deltafunnel==0.6.0 (`table.write_to_mssql(load_mode=
             "create_and_load")`, target validation disabled because a
             discarding server cannot count rows), in its own Python.
Reported per run: wall seconds, rows/s, MB/s of TDS bulk payload (from the
peer's trace), the client's CPU seconds and the peer's CPU seconds (the
machine has 2 cores that both share), and ours/reference ratios.  With
--repeat N the clients alternate N times per table (ours first on even
rounds, the reference first on odd ones) and medians with min..max and the
median of the per-round ratios are printed; the machines are noisy, compare
ratios only.

Usage: bench_mssql_load.py [--narrow-rows N] [--mixed-rows N]
           [--build DIR]             release build with libdftest + mssql-peer
           [--reference-python PY]   Python that has deltafunnel==0.6.0
           [--repeat N]              interleaved runs per client and table
Environment equivalents: DF_BENCH_BUILD, DF_REFERENCE_PYTHON.
"""

import argparse
import ctypes
import decimal
import json
import os
import pathlib
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "tests" / "python"))

from mssql_peer import Client, Peer  # noqa: E402

REFERENCE_SCRIPT = r"""
import json, resource, sys, time
import deltafunnel
uri, table, cs = sys.argv[1], sys.argv[2], sys.argv[3]
s = deltafunnel.Session(default_mssql_connection_string=cs,
                        validation_options={"target_validation_mode": "disabled"})
t = s.delta_lake(uri, name="src")
r0 = resource.getrusage(resource.RUSAGE_SELF); t0 = time.perf_counter()
t.write_to_mssql(schema="dbo", table=table, load_mode="create_and_load")
t1 = time.perf_counter(); r1 = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"seconds": t1 - t0, "cpu": (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)}))
"""


def make_tables(directory, narrow_rows, mixed_rows):
    import pyarrow as pa
    import pyarrow.compute as pc
    from deltalake import write_deltalake

    def chunks(n, size=1_000_000):
        for start in range(0, n, size):
            yield start, min(size, n - start)

    narrow = directory / "narrow"
    for start, n in chunks(narrow_rows):
        i = pa.array(range(start, start + n), pa.int64())
        batch = pa.table({
            "id": i,
            "qty": pc.cast(pc.bit_wise_and(i, 1023), pa.int32()),
            "price": pc.divide(pc.cast(pc.bit_wise_and(pc.multiply(i, 7919), 1_000_000), pa.float64()), 100.0),
            "flag": pc.equal(pc.bit_wise_and(i, 1), 0),
        })
        write_deltalake(str(narrow), batch, mode="append")
    mixed = directory / "mixed"
    cities = pa.array(["Zürich", "Berlin", "São Paulo", "Tokyo", "Lagos", "Montréal", "Austin", "Kraków"])
    for start, n in chunks(mixed_rows):
        i = pa.array(range(start, start + n), pa.int64())
        amount = pa.array([decimal.Decimal(k * 7919 % 100_000_000).scaleb(-4) for k in range(start, start + n)],
                          pa.decimal128(18, 4))
        batch = pa.table({
            "name": pc.binary_join_element_wise("customer-", pc.cast(i, pa.string()), ""),
            "city": pc.take(cities, pc.bit_wise_and(i, 7)),
            "amount": amount,
            "ts": pc.cast(pc.add(pc.multiply(i, 1_000_003), 1_600_000_000_000_000), pa.timestamp("us")),
            "code": pc.cast(pc.bit_wise_and(i, 65535), pa.int32()),
            "note": pa.array([None if k % 5 == 0 else f"note {k % 97}" for k in range(start, start + n)]),
        })
        write_deltalake(str(mixed), batch, mode="append")
    return {
        "narrow": (narrow, narrow_rows, "id bigint;qty int;price float;flag bit",
                   "[id] bigint NULL, [qty] int NULL, [price] float NULL, [flag] bit NULL"),
        "mixed": (mixed, mixed_rows,
                  "name nvarchar(max);city nvarchar(max);amount decimal(18,4);ts datetime2(7);code int;note nvarchar(max)",
                  "[name] nvarchar(max) NULL, [city] nvarchar(max) NULL, [amount] decimal(18,4) NULL, "
                  "[ts] datetime2(7) NULL, [code] int NULL, [note] nvarchar(max) NULL"),
    }


def cpu_self():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def bulk_bytes(peer, table):
    found = re.findall(rf"bulk dbo\.{table}: (\d+) rows, (\d+) bytes", peer.trace_text())
    return (int(found[-1][0]), int(found[-1][1])) if found else (0, 0)


def run_ours(peer, client, lib, uri, rows, spec, ddl, table):
    from pyarrow.cffi import ffi
    cs = peer.conn_str(encrypt="no")  # login-only, the reference's default: both clients do the same work
    client.exec(cs, f"CREATE TABLE [dbo].[{table}] ({ddl})")
    stream = ffi.new("struct ArrowArrayStream*")
    addr = int(ffi.cast("uintptr_t", stream))
    eb = ctypes.create_string_buffer(1024)
    lib.dftest_delta_read.argtypes = [ctypes.c_char_p, ctypes.c_int64, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_char_p,
                                      ctypes.c_size_t]
    peer0, cpu0, t0 = peer.cpu_seconds(), cpu_self(), time.perf_counter()
    if lib.dftest_delta_read(str(uri).encode(), -1, None, ctypes.c_void_p(addr), eb, 1024) != 0:
        raise RuntimeError(eb.value.decode())
    loaded = ctypes.c_int64()
    rc = lib.dftest_mssql_bulk_load(cs.encode(), f"[dbo].[{table}]".encode(), spec.encode(), b"tablock",
                                    ctypes.c_void_p(addr), ctypes.byref(loaded), eb, 1024)
    t1, cpu1, peer1 = time.perf_counter(), cpu_self(), peer.cpu_seconds()
    if stream.release != ffi.NULL:
        stream.release(stream)
    if rc != 0:
        raise RuntimeError(eb.value.decode())
    assert loaded.value == rows, (loaded.value, rows)
    return {"seconds": t1 - t0, "cpu": cpu1 - cpu0, "peer_cpu": peer1 - peer0, "bytes": bulk_bytes(peer, table)[1]}


def run_reference(peer, python, uri, rows, table):
    peer0 = peer.cpu_seconds()
    out = subprocess.run([python, "-c", REFERENCE_SCRIPT, str(uri), table, peer.conn_str(encrypt="no")], capture_output=True,
                         text=True, timeout=3600)
    peer1 = peer.cpu_seconds()
    if out.returncode != 0:
        raise RuntimeError(f"reference failed: {out.stderr[-2000:]}")
    r = json.loads(out.stdout.strip().splitlines()[-1])
    got_rows, nbytes = bulk_bytes(peer, table)
    assert got_rows == rows, (got_rows, rows)
    r.update({"peer_cpu": peer1 - peer0, "bytes": nbytes})
    return r


def fmt(name, rows, runs):
    """One line of medians (min..max of the wall time) over a client's runs."""
    def med(key):
        return statistics.median(r[key] for r in runs)
    secs = [r["seconds"] for r in runs]
    return (f"  {name:<10} {med('seconds'):8.2f} s ({min(secs):.2f}..{max(secs):.2f})  "
            f"{rows / med('seconds'):>12,.0f} rows/s  {med('bytes') / med('seconds') / 1e6:8.1f} MB/s  "
            f"client cpu {med('cpu'):6.2f} s  peer cpu {med('peer_cpu'):6.2f} s")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--narrow-rows", type=int, default=3_000_000)
    ap.add_argument("--mixed-rows", type=int, default=1_000_000)
    ap.add_argument("--build", default=os.environ.get("DF_BENCH_BUILD", str(ROOT / "build-release")))
    ap.add_argument("--reference-python", default=os.environ.get("DF_REFERENCE_PYTHON"))
    ap.add_argument("--json", help="also write the results as JSON here")
    ap.add_argument("--repeat", type=int, default=1, help="interleaved runs per client and table")
    args = ap.parse_args()
    build = pathlib.Path(args.build)
    lib_path, peer_path = build / "tests/tools/libdftest.so", build / "programs/mssql-peer/mssql-peer"
    if not lib_path.exists() or not peer_path.exists():
        sys.exit(f"need a release build with libdftest and mssql-peer in {build} "
                 f"(meson setup {build} -Dbuildtype=release -Dpython=false && ninja -C {build})")
    os.environ["MSSQL_PEER"] = str(peer_path)
    lib = ctypes.CDLL(str(lib_path))
    client = Client(lib)
    report = []
    with tempfile.TemporaryDirectory(prefix="df-bench-mssql-") as tmp:
        t0 = time.perf_counter()
        tables = make_tables(pathlib.Path(tmp), args.narrow_rows, args.mixed_rows)
        print(f"generated Delta tables in {time.perf_counter() - t0:.1f} s")
        with Peer("--discard", max_seconds=7200) as peer:
            for name, (uri, rows, spec, ddl) in tables.items():
                print(f"{name}: {rows:,} rows, {args.repeat} interleaved run(s) each")
                runs = {"ours": [], "reference": []}
                for i in range(args.repeat):
                    order = ("ours", "reference") if i % 2 == 0 else ("reference", "ours")
                    for who in order:
                        if who == "ours":
                            runs["ours"].append(run_ours(peer, client, lib, uri, rows, spec, ddl, f"ours_{name}_{i}"))
                        elif args.reference_python:
                            runs["reference"].append(run_reference(peer, args.reference_python, uri, rows,
                                                                   f"ref_{name}_{i}"))
                report.append({"name": name, "rows": rows, "ours": runs["ours"], "reference": runs["reference"] or None})
                print(fmt("ours", rows, runs["ours"]))
                if not args.reference_python:
                    print("  reference  skipped (set --reference-python or DF_REFERENCE_PYTHON to a Python with deltafunnel==0.6.0)")
                    continue
                print(fmt("reference", rows, runs["reference"]))
                pairs = list(zip(runs["ours"], runs["reference"]))
                tput = [r["seconds"] / o["seconds"] for o, r in pairs]
                cpu = [r["cpu"] / max(o["cpu"], 1e-9) for o, r in pairs]
                print(f"  ratio      ours/reference throughput median {statistics.median(tput):.2f}x "
                      f"({min(tput):.2f}..{max(tput):.2f}), client CPU {statistics.median(cpu):.2f}x less, "
                      f"bytes on the wire {pairs[0][0]['bytes'] / max(pairs[0][1]['bytes'], 1):.2f}x")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"tables": report}, indent=2))


if __name__ == "__main__":
    main()
