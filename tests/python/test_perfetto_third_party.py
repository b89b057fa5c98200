"""Traces from writers that never clear incremental state.

Perfetto reads the packets of a sequence that has not set
SEQ_INCREMENTAL_STATE_CLEARED (sequence_flags bit 0) yet; it only drops
their interned data and skips packets flagged SEQ_NEEDS_INCREMENTAL_STATE.
Third-party writers that write names inline never clear, and their traces
used to be read as holding no retained operation.  The traces here are a
report_synth_tool scenario rewritten the way such a writer would write it:
names, categories and annotation names inline, no clear, no "needs state"
flag.  Perf samples keep their interned callstacks, which then cannot
resolve: they must count as unknown stacks, never break the conversion."""

import json
import os
import pathlib
import subprocess

import pytest

pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
SEQ_CLEARED, SEQ_NEEDS_STATE = 1, 2


def _find(env, relative):
    path = os.environ.get(env)
    if path:
        return pathlib.Path(path)
    found = [build / relative for build in REPO_ROOT.glob("build*")]
    found = [c for c in found if c.is_file() and os.access(c, os.X_OK)]
    return max(found, key=lambda c: c.stat().st_mtime) if found else None


@pytest.fixture(scope="module")
def cli():
    path = _find("DF_PERFETTO_CLI", "programs/delta-funnel-perfetto/delta-funnel-perfetto")
    if path is None:
        raise RuntimeError("delta-funnel-perfetto is not built (meson builds programs/delta-funnel-perfetto)")
    return str(path)


@pytest.fixture(scope="module")
def scenario_trace(tmp_path_factory):
    tool = _find("DF_REPORT_SYNTH_TOOL", "tests/unit/report/report_synth_tool")
    if tool is None:
        raise RuntimeError("report_synth_tool is not built (meson builds tests/unit/report)")
    out = tmp_path_factory.mktemp("pftrace") / "preview.pftrace"
    subprocess.run([str(tool), "preview", str(out)], check=True)
    return out.read_bytes()


def third_party(data, inline=True):
    """The trace without any clear (and without "needs state" flags); with `inline`, every interned name the
    track events use is written inline instead."""
    trace = pb.Trace.FromString(data)
    tables = {}
    for p in trace.packet:
        seq = p.trusted_packet_sequence_id
        if (p.sequence_flags & SEQ_CLEARED) or p.incremental_state_cleared:
            tables[seq] = {"names": {}, "cats": {}, "ann": {}}
        st = tables.setdefault(seq, {"names": {}, "cats": {}, "ann": {}})
        if p.HasField("interned_data"):
            d = p.interned_data
            st["names"].update((e.iid, e.name) for e in d.event_names)
            st["cats"].update((e.iid, e.name) for e in d.event_categories)
            st["ann"].update((e.iid, e.name) for e in d.debug_annotation_names)
        if inline and p.HasField("track_event"):
            te = p.track_event
            if te.HasField("name_iid"):
                te.name = st["names"][te.name_iid]   # a oneof: replaces name_iid
            if len(te.category_iids):
                te.categories.extend(st["cats"][i] for i in te.category_iids)
                del te.category_iids[:]
            for a in te.debug_annotations:
                if a.HasField("name_iid"):
                    a.name = st["ann"][a.name_iid]
        if p.HasField("sequence_flags"):
            p.sequence_flags &= ~(SEQ_CLEARED | SEQ_NEEDS_STATE)
        p.ClearField("incremental_state_cleared")
    assert not any((p.sequence_flags & SEQ_CLEARED) or p.incremental_state_cleared for p in trace.packet)
    return trace.SerializeToString()


def report(cli, trace_bytes, tmp_path, name):
    trace = tmp_path / f"{name}.pftrace"
    trace.write_bytes(trace_bytes)
    artifact = tmp_path / f"{name}.dfprofile"
    proc = subprocess.run([cli, "report", str(trace), "--output", str(tmp_path / f"{name}.html"),
                           "--artifact-output", str(artifact)], capture_output=True, text=True, timeout=60)
    return proc, artifact


def roots(cli, artifact):
    proc = subprocess.run([cli, "inspect", str(artifact)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return [line for line in proc.stdout.splitlines() if line.startswith("semantic ")]


def test_a_trace_that_never_clears_incremental_state_is_converted(cli, scenario_trace, tmp_path):
    proc, original = report(cli, scenario_trace, tmp_path, "original")
    assert proc.returncode == 0, proc.stderr
    proc, converted = report(cli, third_party(scenario_trace), tmp_path, "third_party")
    assert proc.returncode == 0, proc.stderr
    # The same operation tree, with the same exact durations and sample counts.
    assert roots(cli, converted) == roots(cli, original)
    assert any('kind="operation"' in line for line in roots(cli, converted))


def test_interned_references_before_any_clear_are_unknown_not_fatal(cli, scenario_trace, tmp_path):
    # Names left as iids whose interned data Perfetto drops: nothing resolves, so no operation is
    # recognisable; the result is the documented health failure, not a crash or a malformed-trace error.
    proc, _ = report(cli, third_party(scenario_trace, inline=False), tmp_path, "iids")
    assert proc.returncode != 0
    doc = json.loads(proc.stderr.strip().splitlines()[-1])
    assert (doc["phase"], doc["kind"]) == ("health", "incomplete_capture"), doc


def test_a_first_packet_without_the_clear_flag_does_not_hide_the_rest(cli, scenario_trace, tmp_path):
    # A writer that emits a packet before its first clear (here: an inline-named instant on a sequence of
    # its own and a bare packet on every sequence of the scenario) changes nothing that follows.
    trace = pb.Trace.FromString(scenario_trace)
    seqs = sorted({p.trusted_packet_sequence_id for p in trace.packet if p.trusted_packet_sequence_id})
    first_ts = min(p.timestamp for p in trace.packet if p.HasField("timestamp"))
    head = []
    for seq in seqs + [max(seqs) + 1]:
        p = pb.TracePacket(trusted_packet_sequence_id=seq, timestamp=first_ts)
        p.track_event.type = pb.TrackEvent.TYPE_INSTANT
        p.track_event.name = "third-party marker"
        head.append(p)
    out = pb.Trace(packet=head + list(trace.packet))
    proc, original = report(cli, scenario_trace, tmp_path, "original")
    assert proc.returncode == 0, proc.stderr
    proc, converted = report(cli, out.SerializeToString(), tmp_path, "with_head")
    assert proc.returncode == 0, proc.stderr
    assert roots(cli, converted) == roots(cli, original)
