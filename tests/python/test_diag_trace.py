"""Perfetto traces written by src/diag, decoded with Perfetto's published
protos (PyPI `perfetto`) and checked for what trace_processor needs (every
sequence's incremental state and interned ids resolve, clock snapshots and
service events, unpacked callstack frame ids) and for the semantic
track/slice model (track tree, operation/phase/stage slices, worker lanes,
context slices, exact sample attribution).

The traces come from the C tool tests/unit/diag/diag_trace_tool (built by
meson; set DIAG_TRACE_TOOL to choose one), which runs a synthetic preview and
write_all under a capture.
"""

import json
import os
import pathlib
import re
import subprocess

import pytest

pb = pytest.importorskip(
    "perfetto.protos.perfetto.trace.perfetto_trace_pb2",
    reason="the `perfetto` PyPI package (published Perfetto protos) is required to decode traces",
)

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
SEQ_CLEARED = 1
FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
MASK64 = (1 << 64) - 1


def _find_tool():
    env = os.environ.get("DIAG_TRACE_TOOL")
    if env:
        return pathlib.Path(env)
    found = sorted(REPO_ROOT.glob("build*/tests/unit/diag/diag_trace_tool"), key=lambda p: p.stat().st_mtime)
    # A TSan build instruments every memory access with runtime calls, which then
    # dominate the innermost frames; any other build is a better subject.
    plain = [p for p in found if "tsan" not in p.parts[-5]]
    found = plain or found
    return found[-1] if found else None


SANITIZER_RUNTIME = re.compile(r"__(tsan|asan|ubsan|sanitizer|interceptor)")


def innermost_own_frame(frames):
    """The innermost frame that is not a sanitizer runtime's instrumentation."""
    names = [f[0] for f in frames]
    while len(names) > 1 and SANITIZER_RUNTIME.search(names[-1] or ""):
        names.pop()
    return names[-1]


@pytest.fixture(scope="session")
def trace_tool():
    tool = _find_tool()
    if tool is None or not tool.exists():
        raise RuntimeError("diag_trace_tool not found: build it with meson (tests/unit/diag) or set DIAG_TRACE_TOOL")
    return tool


def fnv1a64(text):
    h = FNV_OFFSET
    for b in text.encode():
        h ^= b
        h = (h * FNV_PRIME) & MASK64
    return h


def run_tool(tool, path, *args, env=None):
    proc = subprocess.run([str(tool), str(path), *args], capture_output=True, text=True, timeout=300, env=env)
    if proc.returncode != 0:
        raise AssertionError(f"diag_trace_tool failed ({proc.returncode}): {proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------
# A minimal protobuf wire walker, independent of the protobuf library: used to
# check encodings the generated classes hide (packed vs unpacked repeats).


def _varint(buf, pos):
    shift = value = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def wire_fields(buf):
    """Yields (field number, wire type, value or bytes) of one message."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        field, wt = key >> 3, key & 7
        if wt == 0:
            value, pos = _varint(buf, pos)
        elif wt == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wt == 2:
            n, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + n], pos + n
        elif wt == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise AssertionError(f"unexpected wire type {wt}")
        yield field, wt, value


# ---------------------------------------------------------------------------
# Decoding with the checks trace_processor does not do itself.


class Decoded:
    """Everything the tests look at, resolved through the interning tables."""

    def __init__(self, raw):
        self.raw = raw
        self.trace = pb.Trace.FromString(raw)
        self.descriptors = {}  # uuid -> TrackDescriptor
        self.events = []  # dicts: ts, track, type, cat, name, args, seq
        self.samples = []  # dicts: ts, pid, tid, cpu, frames (root first: (function, mapping path, source, line))
        self.lost_markers = []
        self.defaults = {}  # seq -> TracePacketDefaults
        self.clock_snapshots = []
        self.service_events = []
        self.trace_configs = []
        self._decode()

    def _decode(self):
        cleared = set()
        tables = {}
        for index, pk in enumerate(self.trace.packet):
            seq = pk.trusted_packet_sequence_id
            uses_state = pk.HasField("track_event") or pk.HasField("perf_sample")
            if pk.HasField("interned_data") or uses_state or pk.HasField("trace_packet_defaults") or pk.sequence_flags:
                assert seq != 0, f"packet {index} needs trusted_packet_sequence_id"
            if pk.sequence_flags & SEQ_CLEARED:
                cleared.add(seq)
                tables[seq] = {}
            if pk.HasField("interned_data") or uses_state or pk.HasField("trace_packet_defaults"):
                assert seq in cleared, f"packet {index} on sequence {seq} precedes its incremental-state clear"
            if pk.HasField("trace_packet_defaults"):
                self.defaults[seq] = pk.trace_packet_defaults
            if pk.HasField("interned_data"):
                self._intern(tables[seq], pk.interned_data)
            if pk.HasField("track_descriptor"):
                td = pk.track_descriptor
                assert td.uuid != 0
                assert td.uuid not in self.descriptors, f"track {td.uuid} described twice"
                self.descriptors[td.uuid] = td
            if pk.HasField("track_event"):
                self.events.append(self._event(pk, tables[seq], index))
            if pk.HasField("perf_sample"):
                self._sample(pk, tables[seq])
            if pk.HasField("clock_snapshot"):
                self.clock_snapshots.append(pk.clock_snapshot)
            if pk.HasField("service_event"):
                self.service_events.append(pk.service_event)
            if pk.HasField("trace_config"):
                self.trace_configs.append(pk.trace_config)

    @staticmethod
    def _intern(table, interned):
        groups = {
            "cat": (interned.event_categories, "name"),
            "name": (interned.event_names, "name"),
            "ann": (interned.debug_annotation_names, "name"),
            "fn": (interned.function_names, "str"),
            "mpath": (interned.mapping_paths, "str"),
            "src": (interned.source_paths, "str"),
            "bid": (interned.build_ids, "str"),
        }
        for kind, (entries, attr) in groups.items():
            for e in entries:
                assert e.iid >= 1, f"{kind} iid 0 is reserved"
                d = table.setdefault(kind, {})
                assert e.iid not in d, f"{kind} iid {e.iid} interned twice"
                d[e.iid] = getattr(e, attr)
        for kind, entries in (("map", interned.mappings), ("frame", interned.frames), ("stack", interned.callstacks)):
            for e in entries:
                assert e.iid >= 1
                d = table.setdefault(kind, {})
                assert e.iid not in d, f"{kind} iid {e.iid} interned twice"
                d[e.iid] = e

    @staticmethod
    def _lookup(table, kind, iid):
        assert iid in table.get(kind, {}), f"{kind} iid {iid} does not resolve on its sequence"
        return table[kind][iid]

    def _event(self, pk, table, index):
        te = pk.track_event
        assert pk.timestamp > 0, f"track event in packet {index} has no timestamp"
        assert te.track_uuid != 0
        cats = [self._lookup(table, "cat", c) for c in te.category_iids]
        assert len(cats) == 1
        name = self._lookup(table, "name", te.name_iid) if te.name_iid else None
        if te.type != pb.TrackEvent.TYPE_SLICE_END:
            assert name, "begin and instant events are named"
        args = {}
        for a in te.debug_annotations:
            key = self._lookup(table, "ann", a.name_iid)
            kind = a.WhichOneof("value")
            args[key] = getattr(a, kind)
        return {"ts": pk.timestamp, "track": te.track_uuid, "type": te.type, "cat": cats[0], "name": name,
                "args": args, "index": index}

    def _sample(self, pk, table):
        ps = pk.perf_sample
        assert ps.pid != 0 and (ps.tid != 0 or ps.kernel_records_lost), "perf samples carry pid and tid"
        if ps.kernel_records_lost:
            self.lost_markers.append(ps.kernel_records_lost)
            return
        frames = []
        if ps.callstack_iid:
            stack = self._lookup(table, "stack", ps.callstack_iid)
            for fid in stack.frame_ids:
                fr = self._lookup(table, "frame", fid)
                fn = self._lookup(table, "fn", fr.function_name_id) if fr.function_name_id else b""
                mpath = ""
                if fr.mapping_id:
                    m = self._lookup(table, "map", fr.mapping_id)
                    mpath = "/".join(self._lookup(table, "mpath", i).decode() for i in m.path_string_ids)
                    if m.build_id:
                        self._lookup(table, "bid", m.build_id)
                src = self._lookup(table, "src", fr.source_path_iid).decode() if fr.source_path_iid else None
                frames.append((fn.decode(), mpath, src, fr.line_number))
        self.samples.append({"ts": pk.timestamp, "pid": ps.pid, "tid": ps.tid, "cpu": ps.cpu, "frames": frames})

    # Helpers used by the tests.

    def track_by_name(self, name):
        hits = [d for d in self.descriptors.values() if d.name == name]
        assert len(hits) == 1, f"expected one track named {name!r}, found {len(hits)}"
        return hits[0]

    def slices(self, track_uuid):
        """Completed slices of a track: (name, begin_ts, end_ts, begin args, end args)."""
        events = sorted((e for e in self.events if e["track"] == track_uuid), key=lambda e: (e["ts"], e["index"]))
        stack, out = [], []
        for e in events:
            if e["type"] == pb.TrackEvent.TYPE_SLICE_BEGIN:
                stack.append(e)
            elif e["type"] == pb.TrackEvent.TYPE_SLICE_END:
                assert stack, f"unmatched slice end on track {track_uuid}"
                b = stack.pop()
                out.append((b["name"], b["ts"], e["ts"], b["args"], e["args"]))
        assert not stack, f"unterminated slices on track {track_uuid}: {[s['name'] for s in stack]}"
        return out

    def instants(self, track_uuid):
        return [e for e in self.events if e["track"] == track_uuid and e["type"] == pb.TrackEvent.TYPE_INSTANT]

    def thread_track(self, tid):
        hits = [d for d in self.descriptors.values() if d.HasField("thread") and d.thread.tid == tid]
        assert len(hits) == 1, f"thread {tid} has {len(hits)} descriptors"
        return hits[0]


def semantic_tracks(dec):
    return [d for d in dec.descriptors.values() if not d.HasField("thread") and not d.HasField("process")]


@pytest.fixture(scope="module")
def sampled(trace_tool, tmp_path_factory):
    path = tmp_path_factory.mktemp("diag") / "sampled.pftrace"
    stats = run_tool(trace_tool, path, "--hz", "1000", "--partitions", "6")
    return path, stats, Decoded(path.read_bytes())


# ---------------------------------------------------------------------------
# Format-level requirements.


def test_every_sequence_and_interned_id_resolves(sampled):
    _, stats, dec = sampled
    assert stats["events_lost"] == 0
    assert len(dec.events) > 100
    for e in dec.events:
        assert e["track"] in dec.descriptors, f"event {e['name']} on a track without descriptor"
    assert dec.defaults[1].timestamp_clock_id == 3  # MONOTONIC, converted through the snapshot
    assert dec.defaults[2].timestamp_clock_id == 3


def test_clock_snapshot_service_events_and_config(sampled):
    _, stats, dec = sampled
    assert len(dec.clock_snapshots) == 2
    for snap in dec.clock_snapshots:
        ids = {c.clock_id for c in snap.clocks}
        assert {3, 6} <= ids
        assert snap.primary_trace_clock == pb.BUILTIN_CLOCK_BOOTTIME
    assert any(s.tracing_started for s in dec.service_events)
    assert any(s.tracing_disabled for s in dec.service_events)
    perf = [ds.config for cfg in dec.trace_configs for ds in cfg.data_sources if ds.config.name == "linux.perf"]
    assert len(perf) == 1
    assert perf[0].perf_event_config.timebase.frequency == stats["requested_hz"] == 1000


def test_callstack_frame_ids_are_written_unpacked(sampled):
    path, _, _ = sampled
    raw = path.read_bytes()
    seen = 0
    for field, _, packet in wire_fields(raw):
        assert field == 1
        for pf, _, interned in wire_fields(packet):
            if pf != 12:
                continue
            for inf, _, stack in wire_fields(interned):
                if inf != 7:  # InternedData.callstacks
                    continue
                kinds = {wt for f, wt, _ in wire_fields(stack) if f == 2}
                assert kinds <= {0}, "Callstack.frame_ids must be unpacked varints"
                seen += 1
    assert seen > 0


def test_trace_file_is_private_and_not_overwritten(trace_tool, tmp_path):
    path = tmp_path / "private.pftrace"
    env = dict(os.environ, DF_TEST_SECRET="hunter2-secret-value")
    run_tool(trace_tool, path, "--no-sampling", env=env)
    assert (path.stat().st_mode & 0o777) == 0o600
    before = path.read_bytes()
    assert b"hunter2-secret-value" not in before  # no environment
    assert str(tmp_path).encode() not in before  # no command line
    proc = subprocess.run([str(trace_tool), str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 69 and "output_unavailable" in proc.stderr
    assert path.read_bytes() == before
    dec = Decoded(before)
    procs = [d for d in dec.descriptors.values() if d.HasField("process")]
    assert len(procs) == 1 and not procs[0].process.cmdline
    assert procs[0].process.process_name == "diag_trace_tool"


# ---------------------------------------------------------------------------
# The semantic track tree: names, UUIDs and ranks.


def test_track_tree_names_uuids_and_ranks(sampled):
    _, stats, dec = sampled
    op1, op2 = stats["preview_operation_id"], stats["write_all_operation_id"]
    process = [d for d in dec.descriptors.values() if d.HasField("process")][0]
    diag = dec.track_by_name("Delta Funnel diagnostics")
    assert diag.parent_uuid == process.uuid and diag.sibling_order_rank == 10

    def check(name, parent, ident, rank):
        d = dec.track_by_name(name)
        assert d.parent_uuid == parent.uuid, name
        assert d.uuid == parent.uuid ^ fnv1a64(name) ^ ident, f"uuid formula for {name}"
        assert d.sibling_order_rank == rank, name
        return d

    op = f"Operation [op-{op1:020d}]"
    t_op = check(op, diag, op1, op1)
    t_phases = check(f"{op} / phases", t_op, 0, 10)
    check(f"{op} / query [q-{1:020d}] / planning", t_phases, 1, 21)
    t_query = check(f"{op} / query [q-{1:020d}]", t_op, 1, 21)
    workers = [d for d in semantic_tracks(dec) if d.parent_uuid == t_query.uuid and "/ worker [w-" in d.name]
    assert workers
    for w in workers:
        lane = int(re.search(r"\[w-(\d{20})\]$", w.name).group(1))
        check(w.name, t_query, lane, lane)
    streams = [d for d in semantic_tracks(dec) if "Delta scan output [s-" in d.name]
    assert len(streams) == 6
    for s in streams:
        sid = int(re.search(r"\[s-(\d{20})\]$", s.name).group(1))
        check(s.name, t_query, sid, 1_000_000 + sid)
        assert s.sibling_order_rank > max(w.sibling_order_rank for w in workers)
    op_b = f"Operation [op-{op2:020d}]"
    t_op2 = check(op_b, diag, op2, op2)
    for owner in (1, 2):
        check(f"{op_b} / owner [o-{owner:020d}]", t_op2, owner, 30 + owner)
    for d in semantic_tracks(dec):
        if d.uuid == diag.uuid:
            continue
        assert d.disallow_merging_with_system_tracks
        assert d.child_ordering == pb.TrackDescriptor.EXPLICIT
        assert d.sibling_merge_behavior == pb.TrackDescriptor.SIBLING_MERGE_BEHAVIOR_NONE
        for token in re.findall(r"\[(op|q|w|s|o)-(\d+)\]", d.name):
            assert len(token[1]) == 20, f"token not zero-padded in {d.name}"
    uuids = [d.uuid for d in dec.descriptors.values()]
    assert len(uuids) == len(set(uuids))


# ---------------------------------------------------------------------------
# Slices and their identity arguments.


def test_operation_phase_and_stage_slices(sampled):
    _, stats, dec = sampled
    op1 = stats["preview_operation_id"]
    op = f"Operation [op-{op1:020d}]"
    instants = dec.instants(dec.track_by_name("Delta Funnel diagnostics").uuid)
    group = [g for g in instants if g["name"] == "Delta Funnel diagnostic group"]
    assert len(group) == 2 and all(not g["args"] for g in group)
    # The sampler in use and why are recorded once, at the end (Perfetto UI shows the arguments).
    sampler = [g for g in instants if g["name"] == "Delta Funnel sampler"]
    assert len(sampler) == 1 and len(instants) == 3
    info = sampler[0]["args"]
    assert info["sampler_backend"] == stats["backend"] and info["sampler_reason"] == stats["backend_reason"]
    assert info["requested_hz"] == stats["requested_hz"] and info["samples"] == stats["samples"]
    assert "operation_id" not in info
    roots = dec.slices(dec.track_by_name(op).uuid)
    assert [r[0] for r in roots] == ["Delta Funnel preview"]
    _, b, e, args, end_args = roots[0]
    assert args["operation_id"] == op1 and args["time_semantics"] == "wall_clock"
    assert args["operation_kind"] == "preview" and "capture_scope_id" not in args
    assert end_args["result"] == "ok"
    phases = dec.slices(dec.track_by_name(f"{op} / phases").uuid)
    names = [s[0] for s in sorted(phases, key=lambda s: s[1])]
    assert names == ["Planning", "DataFrame planning", "Physical planning", "Execution", "Stream setup",
                     "Execute and collect", "Finalization", "Format text", "Format HTML"]
    for name, sb, se, sargs, sres in phases:
        assert b <= sb <= se <= e
        assert sargs["time_semantics"] == "wall_clock" and sres["result"] == "ok"
        if name not in ("Planning", "Execution", "Finalization"):
            assert sargs["stage_name"] == name
            assert sargs["stage_category"] == "delta_funnel.preview.phase"
            assert sargs["operation_kind"] == "preview"


def test_query_planning_and_instant(sampled):
    _, stats, dec = sampled
    op = f"Operation [op-{stats['preview_operation_id']:020d}]"
    planning = dec.slices(dec.track_by_name(f"{op} / query [q-{1:020d}] / planning").uuid)
    by_name = {s[0]: s for s in planning}
    plan = by_name["DataFusion query planning"]
    assert plan[3]["query_execution_id"] == 1 and plan[3]["query_scope"] == "preview"
    assert plan[4]["result"] == "ok"
    detail = by_name["Delta scan planning"]
    assert plan[1] <= detail[1] <= detail[2] <= plan[2]
    assert detail[3]["query_execution_id"] == 1 and "result" not in detail[4]
    q_instants = dec.instants(dec.track_by_name(f"{op} / query [q-{1:020d}]").uuid)
    assert [i["name"] for i in q_instants] == ["DataFusion query"]
    assert q_instants[0]["args"]["time_semantics"] == "wall_clock"


def test_worker_lanes_activities_and_await_spans(sampled):
    _, stats, dec = sampled
    op = f"Operation [op-{stats['preview_operation_id']:020d}]"
    query = dec.track_by_name(f"{op} / query [q-{1:020d}]")
    activities = []
    for w in semantic_tracks(dec):
        if w.parent_uuid != query.uuid or "/ worker [w-" not in w.name:
            continue
        lane = int(w.name[-21:-1])
        slices = dec.slices(w.uuid)
        # Lanes are exclusive: top-level slices on one lane never overlap.
        tops = sorted((s for s in slices if not any(o is not s and o[1] <= s[1] and s[2] <= o[2] and
                                                   (o[1], o[2]) != (s[1], s[2]) for o in slices)),
                      key=lambda s: s[1])
        for a, b in zip(tops, tops[1:]):
            assert a[2] <= b[1], f"overlapping slices on lane {lane}"
        for name, _, _, args, end in slices:
            assert args["worker_lane_id"] == lane
            assert args["time_semantics"] == "active"
            if name == "Object store transport":
                assert args["activity"] == "poll_next"  # inherited from the scan activity
                continue
            activities.append((name, args, end))
    names = {a[0] for a in activities}
    assert names == {"CoalescePartitionsExec", "BurnExec", "DeltaScanExec"}
    coord = [a for a in activities if a[0] == "CoalescePartitionsExec"]
    assert len(coord) == 1 and coord[0][1]["worker_kind"] == "coordinator" and coord[0][1]["worker_lane_id"] == 0
    for name, args, end in activities:
        if name == "CoalescePartitionsExec":
            continue
        assert args["worker_kind"] == "runtime"
        assert args["activity"] in ("execute", "poll_next")
        expected = {"execute": {"stream"}, "poll_next": {"batch", "eof"}}[args["activity"]]
        assert end["result"] in expected
        assert {"node_id", "operator_partition", "execution_stream_id", "query_execution_id"} <= args.keys()
    assert sum(1 for a in activities if a[0] == "BurnExec") == 6 * 5
    for s in semantic_tracks(dec):
        if "Delta scan output [s-" not in s.name:
            continue
        aw = dec.slices(s.uuid)
        assert len(aw) == 4
        for name, _, _, args, end in aw:
            assert name == "Await Delta scan output"
            assert args["execution_activity_name"] == "Await Delta scan output"
            assert args["activity"] == "await_output" and args["time_semantics"] == "wall_clock"
            assert args["execution_stream_id"] == int(s.name[-21:-1]) and end["result"] == "ok"


def test_write_all_owner_tracks_and_inherited_details(sampled):
    _, stats, dec = sampled
    op = f"Operation [op-{stats['write_all_operation_id']:020d}]"
    o2 = dec.slices(dec.track_by_name(f"{op} / owner [o-{2:020d}]").uuid)
    names = [s[0] for s in sorted(o2, key=lambda s: (s[1], -s[2]))]
    assert names[0] == "Execute output"
    assert names.count("Poll query batch") == 3 and names.count("Write batch to SQL Server") == 3
    by = {s[0]: s for s in o2}
    fin = by["Finalize SQL Server writer"]
    assert fin[3]["stage_category"] == "delta_funnel.write.sql_server" and fin[3]["stage_owner_id"] == 2
    assert fin[4]["result"] == "error" and by["Execute output"][4]["result"] == "error"
    flush = by["Flush SQL Server connection"]
    assert fin[1] <= flush[1] <= flush[2] <= fin[2]
    assert flush[3]["stage_name"] == "Finalize SQL Server writer" and flush[3]["stage_owner_id"] == 2
    root = dec.slices(dec.track_by_name(op).uuid)
    assert root[0][0] == "Delta Funnel SQL Server write_all" and root[0][4]["result"] == "error"
    planning = dec.slices(dec.track_by_name(f"{op} / query [q-{2:020d}] / planning").uuid)
    assert planning[0][3]["query_owner"] == "customers" and planning[0][3]["query_scope"] == "mssql_output"


def test_context_slices_on_thread_tracks(sampled):
    _, _, dec = sampled
    threads = [d for d in dec.descriptors.values() if d.HasField("thread")]
    assert any(t.thread.thread_name.startswith("dfworker") for t in threads)
    contexts = [e for e in dec.events if e["cat"] == "delta_funnel.profile.context"]
    semantic = [e for e in dec.events if e["cat"] == "delta_funnel.profile"]
    assert contexts and semantic
    thread_uuids = {t.uuid for t in threads}
    assert all(e["track"] in thread_uuids for e in contexts)
    assert not any(e["track"] in thread_uuids for e in semantic)
    tasks = [e for e in contexts if e["name"] == "Delta Funnel execution context"]
    assert len(tasks) == 6
    ids = {t["args"]["profile_context_id"] for t in tasks}
    assert len(ids) == 6
    for t in tasks:
        assert t["args"]["context_name"] == "DataFusion task context"
        assert t["args"]["activity"] == "spawned_task" and t["args"]["worker_kind"] == "runtime"
    for t in threads:
        dec.slices(t.uuid)  # balanced


# ---------------------------------------------------------------------------
# Native samples: each belongs to the span its thread was in when it was taken.


def innermost_context(dec, tid, ts):
    slices = dec.slices(dec.thread_track(tid).uuid)
    inside = [s for s in slices if s[1] <= ts < s[2]]
    return min(inside, key=lambda s: s[2] - s[1])[0] if inside else None


def test_samples_are_symbolized_and_attributed_exactly(sampled):
    _, stats, dec = sampled
    assert stats["samples"] > 0 and dec.samples
    burn = [s for s in dec.samples if any(f[0] == "diag_tool_burn" for f in s["frames"])]
    assert len(burn) >= 10, f"only {len(burn)} samples in diag_tool_burn"
    for s in burn:
        assert innermost_context(dec, s["tid"], s["ts"]) == "BurnExec"
    names = [f[0] for s in burn for f in s["frames"]]
    assert "run_partition" in names
    f = next(f for s in burn for f in s["frames"] if f[0] == "diag_tool_burn")
    assert f[1].endswith("/diag_trace_tool")
    # Optimised builds inline helpers into the loop: the line may then be the inlined header's.
    assert f[2] is None or (f[2].endswith(("diag_trace_tool.c", ".h")) and f[3] > 0)
    for s in dec.samples:
        dec.thread_track(s["tid"])  # every sampled thread has a named track


def test_timer_backend_can_be_forced(trace_tool, tmp_path):
    path = tmp_path / "timer.pftrace"
    stats = run_tool(trace_tool, path, "--backend", "timer", "--hz", "1000")
    assert stats["backend"] == "thread_cpu_timer"
    assert "requested" in stats["backend_reason"]
    assert 0 < stats["effective_hz"] <= 1000
    dec = Decoded(path.read_bytes())
    # A sample of weight w appears w times.
    assert len(dec.samples) == stats["sample_weight"] > 0
    burn = [s for s in dec.samples if any(f[0] == "diag_tool_burn" for f in s["frames"])]
    assert burn
    for s in burn:
        assert innermost_own_frame(s["frames"]) in ("diag_tool_burn", "df_hash_u64", "df_thread_cpu_ns",
                                                   "clock_gettime", "__clock_gettime", "read_clock")
        assert innermost_context(dec, s["tid"], s["ts"]) == "BurnExec"


def test_budget_truncation_keeps_task_roots(trace_tool, tmp_path):
    path = tmp_path / "budget.pftrace"
    stats = run_tool(trace_tool, path, "--max-spans", "5", "--no-sampling", "--scoped")
    dec = Decoded(path.read_bytes())
    op = f"Operation [op-{stats['preview_operation_id']:020d}]"
    marks = dec.instants(dec.track_by_name(op).uuid)
    assert [m["name"] for m in marks] == ["Operator activity trace truncated"]
    assert marks[0]["args"] == {"maximum_spans": 5}
    root = dec.slices(dec.track_by_name(op).uuid)[0]
    assert root[3]["capture_scope_id"] == stats["capture_scope_id"] >= 1
    query = dec.track_by_name(f"{op} / query [q-{1:020d}]")
    acts = [s for w in semantic_tracks(dec) if w.parent_uuid == query.uuid and "/ worker [w-" in w.name
            for s in dec.slices(w.uuid)]
    burn = [a for a in acts if a[0] == "BurnExec"]
    assert len(burn) == 6 * 5  # task roots survive the budget
    assert len([a for a in acts if a[0] == "DeltaScanExec"]) <= 5
