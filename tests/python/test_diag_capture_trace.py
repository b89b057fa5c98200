"""A real workload's trace, decoded with Perfetto's published protos.

A Python workload previews a 5,000,000-row datagen table (a full scan:
the filter keeps almost nothing) under capture-workload at 1000 Hz.  The
trace must load the way Perfetto's tools need it (as test_diag_trace.Decoded
checks), show the semantic track tree of docs/diagnostics.md, close every slice, carry about one
sample per millisecond of the workload's CPU, and resolve its stacks to
our functions: the Parquet decoding functions appear on the scan's worker.
"""

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

deltafunnel = pytest.importorskip("deltafunnel")
pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2",
                         reason="the `perfetto` PyPI package (published Perfetto protos) is required")
from test_diag_trace import Decoded  # noqa: E402  (the decoder with trace_processor's own checks)

TOKEN = r"\d{20}"


@pytest.fixture(scope="module")
def table5m(cli, tmp_path_factory):
    out = tmp_path_factory.mktemp("trace5m") / "t"
    subprocess.run([cli, "datagen", "--output", str(out), "--rows", "5000000", "--files", "4"], check=True,
                   capture_output=True, timeout=600)
    return out


def capture(tmp_path, table, *args, env=None):
    from deltafunnel import _perfetto
    stats = tmp_path / "cpu.json"
    wl = tmp_path / "wl.py"
    wl.write_text(
        "import json, os, time, deltafunnel\n"
        "assert deltafunnel.init_perfetto_diagnostics() is True\n"
        "s = deltafunnel.Session()\n"
        f"s.delta_lake({str(table)!r}, name='t')\n"
        "t = s.table_from_sql('SELECT * FROM t WHERE id % 1000003 = 7')\n"
        "t0, w0 = os.times(), time.monotonic_ns()\n"
        "t.preview(20)\n"
        "t1, w1 = os.times(), time.monotonic_ns()\n"
        f"json.dump({{'user': t1.user - t0.user, 'system': t1.system - t0.system, 'wall_ns': w1 - w0}}, "
        f"open({str(stats)!r}, 'w'))\n")
    trace = tmp_path / "full.pftrace"
    proc = subprocess.run([str(_perfetto.capture_workload_path()), *args, "--output", str(trace), "--",
                           sys.executable, str(wl)], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr
    status = proc.stdout.strip().splitlines()[-1]
    assert status.startswith("workload_status=0 tracebox_status=0 health_status=0 report_status=0"), proc.stdout
    return Decoded(trace.read_bytes()), json.loads(stats.read_text()), proc


@pytest.fixture(scope="module")
def full(table5m, tmp_path_factory):
    return capture(tmp_path_factory.mktemp("full"), table5m, "--sample-hz", "1000")


def named(dec, pattern):
    rx = re.compile(pattern)
    return [d for d in dec.descriptors.values() if d.name and rx.fullmatch(d.name)]


def test_track_tree_is_the_guides_hierarchy(full):
    dec, _, _ = full
    by_uuid = dec.descriptors
    process = [d for d in by_uuid.values() if d.HasField("process")]
    assert len(process) == 1
    diag = named(dec, "Delta Funnel diagnostics")
    assert len(diag) == 1 and diag[0].parent_uuid == process[0].uuid
    ops = named(dec, f"Operation \\[op-{TOKEN}\\]")
    assert len(ops) == 1 and ops[0].parent_uuid == diag[0].uuid
    op = ops[0]
    opname = op.name
    phases = named(dec, re.escape(opname) + " / phases")
    assert len(phases) == 1 and phases[0].parent_uuid == op.uuid
    queries = named(dec, re.escape(opname) + f" / query \\[q-{TOKEN}\\]")
    assert len(queries) == 1 and queries[0].parent_uuid == op.uuid
    planning = named(dec, re.escape(queries[0].name) + " / planning")
    assert len(planning) == 1 and planning[0].parent_uuid == phases[0].uuid
    workers = named(dec, re.escape(queries[0].name) + f" / worker \\[w-{TOKEN}\\]")
    assert len(workers) >= 2, "the scan's partitions run on worker lanes"
    assert all(w.parent_uuid == queries[0].uuid for w in workers)
    outputs = named(dec, re.escape(queries[0].name) + f" / Delta scan output \\[s-{TOKEN}\\]")
    assert outputs and all(o.parent_uuid == queries[0].uuid for o in outputs)
    assert max(w.sibling_order_rank for w in workers) < min(o.sibling_order_rank for o in outputs)
    for d in [op, *phases, *queries, *planning, *workers, *outputs]:
        assert d.disallow_merging_with_system_tracks and d.child_ordering == pb.TrackDescriptor.EXPLICIT
    # The exact filter token of the guide matches one operation track and its descendants only.
    token = re.search(f"op-{TOKEN}\\]", opname).group(0)
    assert all(token in d.name or not d.name.startswith("Operation") for d in by_uuid.values())


def test_every_slice_is_closed_and_every_event_has_a_track(full):
    dec, _, _ = full
    for e in dec.events:
        assert e["track"] in dec.descriptors
    names = set()
    for uuid in {e["track"] for e in dec.events}:
        for name, begin, end, _, end_args in dec.slices(uuid):  # asserts balance per track
            assert end >= begin
            names.add(name)
    for expected in ("Delta Funnel preview", "Planning", "Execution", "Finalization", "DataFrame planning",
                     "Physical planning", "Stream setup", "Execute and collect", "Format text", "Format HTML",
                     "DataFusion query planning", "DeltaScanExec", "Await Delta scan output"):
        assert expected in names, expected


def test_operator_activities_carry_their_identity(full):
    dec, _, _ = full
    workers = named(dec, f"Operation \\[op-{TOKEN}\\] / query \\[q-{TOKEN}\\] / worker \\[w-{TOKEN}\\]")
    activities = [s for w in workers for s in dec.slices(w.uuid)]
    assert activities
    for name, _, _, args, end_args in activities:
        assert args["time_semantics"] == "active"
        assert args["activity"] in ("execute", "poll_next")
        for key in ("operation_id", "query_execution_id", "worker_lane_id", "worker_kind", "node_id",
                    "operator_partition", "execution_stream_id"):
            assert key in args, (name, key, args)
        assert end_args["result"] in ("stream", "batch", "eof", "pending", "error", "cancelled")
    kinds = {args["worker_kind"] for _, _, _, args, _ in activities}
    assert "runtime" in kinds and "coordinator" in kinds


def operation_window(dec):
    op = named(dec, f"Operation \\[op-{TOKEN}\\]")[0]
    root = [s for s in dec.slices(op.uuid) if s[0] == "Delta Funnel preview"][0]
    return root[1], root[2]


def test_sample_count_matches_the_sampled_cpu_time(full):
    dec, cpu, _ = full
    begin, end = operation_window(dec)
    n = sum(1 for s in dec.samples if begin <= s["ts"] < end)
    # perf_event cpu-clock samples user-mode execution (kernel frames are excluded).
    expected = 1000 * cpu["user"]
    assert expected > 100, cpu
    assert abs(n - expected) <= 0.2 * expected, (n, expected, cpu)


def test_stacks_resolve_and_parquet_decoding_runs_on_the_scan_worker(full):
    dec, _, _ = full
    begin, end = operation_window(dec)
    names = {d.thread.tid: d.thread.thread_name for d in dec.descriptors.values() if d.HasField("thread")}
    # The capture's own collector symbolizes new frames as they appear (with libdw, which may be
    # inflating compressed debug sections of system libraries that have no symbols of their own):
    # real overhead, shown on its own named thread, but not the workload whose stacks must resolve.
    assert any(n == "df-diag-collect" for n in names.values()), sorted(set(names.values()))
    window = [s for s in dec.samples if begin <= s["ts"] < end and names.get(s["tid"]) != "df-diag-collect"]
    with_stack = [s for s in window if s["frames"]]
    assert len(with_stack) >= 0.95 * len(window)
    resolved = [s for s in with_stack if s["frames"][-1][0]]
    assert len(resolved) >= 0.9 * len(with_stack)
    # Context slices tell which operator a thread was running at each instant.
    contexts = {}
    for d in dec.descriptors.values():
        if d.HasField("thread"):
            contexts[d.thread.tid] = [s for s in dec.slices(d.uuid)]
    parquet = [s for s in resolved if any("parquet" in f[0] for f in s["frames"])]
    assert len(parquet) >= 0.3 * len(resolved), "a full scan spends its CPU decoding Parquet"
    on_scan = 0
    for s in parquet:
        inside = [c for c in contexts.get(s["tid"], []) if c[1] <= s["ts"] < c[2]]
        if any(c[0] == "DeltaScanExec" and c[3].get("worker_kind") == "runtime" for c in inside):
            on_scan += 1
    assert on_scan >= 0.9 * len(parquet), (on_scan, len(parquet))
    # Our own modules are named, with build ids, so offline tools can re-symbolize.
    modules = {f[1] for s in resolved for f in s["frames"]}
    assert any(m.endswith(".so") or "python" in m for m in modules)


def test_backend_b_forced_gets_multi_frame_stacks_on_the_workers(table5m, tmp_path):
    env = dict(os.environ, DELTAFUNNEL_PROFILE_SAMPLER="thread_cpu_timer")
    dec, cpu, proc = capture(tmp_path, table5m, "--sample-hz", "1000", env=env)
    assert "sampler thread_cpu_timer" in proc.stderr
    begin, end = operation_window(dec)
    window = [s for s in dec.samples if begin <= s["ts"] < end]
    assert window
    deep = [s for s in window if len(s["frames"]) >= 4]
    assert len(deep) >= 0.5 * len(window)
    assert any("parquet" in f[0] for s in deep for f in s["frames"])
    # Weighted samples stand for CPU-time intervals (user and system time for CPU-time timers).
    expected = 1000 * (cpu["user"] + cpu["system"])
    assert abs(len(window) - expected) <= 0.2 * expected, (len(window), expected)


def test_parallel_bulk_load_threads_work_for_the_writers_stage(table5m, tmp_path):
    """Spawned bulk-load threads enter the writer's span identity (df_diag_context_capture/enter)."""
    mssql_peer = pytest.importorskip("mssql_peer")
    from deltafunnel import _perfetto
    try:
        peer = mssql_peer.Peer()
    except RuntimeError as e:
        pytest.skip(str(e))
    with peer:
        wl = tmp_path / "wl.py"
        wl.write_text(
            "import deltafunnel\n"
            "assert deltafunnel.init_perfetto_diagnostics() is True\n"
            f"s = deltafunnel.Session(default_mssql_connection_string={peer.conn_str()!r})\n"
            f"s.delta_lake({str(table5m)!r}, name='t')\n"
            "t = s.table_from_sql('SELECT id, quantity FROM t WHERE id < 300000')\n"
            "r = t.write_to_mssql(schema='dbo', table='par', load_mode='create_and_load', parallel_connections=3)\n"
            "assert r['write_stats']['rows_written'] == 300000, r\n")
        trace = tmp_path / "par.pftrace"
        proc = subprocess.run([str(_perfetto.capture_workload_path()), "--output", str(trace), "--",
                               sys.executable, str(wl)], capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
    dec = Decoded(trace.read_bytes())
    writer_tid = None
    stages_by_thread = {}
    for d in dec.descriptors.values():
        if not d.HasField("thread"):
            continue
        for name, _, _, args, _ in dec.slices(d.uuid):
            if name == "Stream and write batches" and args.get("stage_owner_id") == 1:
                writer_tid = d.thread.tid
            if args.get("activity") == "spawned_task" and "stage_name" in args:
                stages_by_thread.setdefault(d.thread.tid, set()).add(args["stage_name"])
    assert writer_tid is not None
    workers = {tid: st for tid, st in stages_by_thread.items() if tid != writer_tid}
    assert len(workers) >= 2, stages_by_thread  # at least two of the three bulk-load threads were recorded
    for stages in workers.values():
        assert stages <= {"Stream and write batches", "Finalize SQL Server writer"}
        assert "Finalize SQL Server writer" in stages  # every worker flushes its own load at the end
