"""Ctrl-C and failures while native code runs.

SIGINT stops a running to_arrow(), preview(), Arrow stream or SQL Server
write within 0.5 s: each case runs in a child process (signals reach only
Python's main thread) whose SIGINT handler notes when the signal arrived,
and the child reports how long it took from there to KeyboardInterrupt.
A cancelled write leaves the target as it was in every load mode (staging
tables dropped, the transaction rolled back) and says `cancelled`.  Arrow
failures arrive as DeltaFunnelError with phase and kind (to_arrow) or with
"[phase/kind]" in the message (other consumers of the C stream)."""

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import run_datagen

deltafunnel = pytest.importorskip("deltafunnel")
pa = pytest.importorskip("pyarrow")

# A query that runs for minutes (a join whose output is ~2e10 rows before the count).
SLOW_SQL = ("SELECT count(*) AS n FROM t a JOIN t b ON a.id % 7 = b.id % 7 "
            "WHERE a.id < 400000 AND b.id < 400000")
LATENCY_S = 0.5

CHILD_PRELUDE = textwrap.dedent("""
    import json, signal, sys, time
    import deltafunnel
    arrived = []
    def on_sigint(signum, frame):
        arrived.append(time.monotonic())
        raise KeyboardInterrupt
    signal.signal(signal.SIGINT, on_sigint)
    def report(**fields):
        print(json.dumps(fields), flush=True)
    def interrupted(e):
        err = getattr(e, "deltafunnel_operation_error", None)
        report(outcome="interrupted", latency=time.monotonic() - arrived[0],
               status=getattr(e, "deltafunnel_operation_status", None),
               error_kind=getattr(err, "kind", None), context=getattr(err, "context", None))
""")


@pytest.fixture(scope="module")
def narrow(cli, tmp_path_factory):
    """1,000,000 narrow rows (id, value, flag) in one uncompressed file."""
    return run_datagen(cli, tmp_path_factory.mktemp("cancel") / "t", 1_000_000, "--shape", "narrow",
                       "--codec", "none")


def _run_child(body, args, started=None, delay=0.5, timeout=120):
    """Runs the child; sends SIGINT `delay` s after it printed "started" (and `started()` is true)."""
    proc = subprocess.Popen([sys.executable, "-c", CHILD_PRELUDE + textwrap.dedent(body), *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.strip() == "started", line + proc.stderr.read()
        deadline = time.monotonic() + 60
        while started is not None and not started() and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        out, errout = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, errout
    return json.loads(out.strip().splitlines()[-1])


QUERY_CHILD = """
    mode, path, sql = sys.argv[1], sys.argv[2], sys.argv[3]
    s = deltafunnel.Session()
    s.delta_lake(path, name="t")
    q = s.table_from_sql(sql)
    print("started", flush=True)
    try:
        if mode == "to_arrow":
            q.to_arrow()
        elif mode == "preview":
            q.preview()
        elif mode == "reader":
            import pyarrow as pa
            for batch in pa.RecordBatchReader._import_from_c_capsule(q.__arrow_c_stream__()):
                pass
        report(outcome="finished")
    except KeyboardInterrupt as e:
        interrupted(e)
    except OSError as e:
        # pyarrow's echo of the interrupted get_next; KeyboardInterrupt was re-armed and follows
        # at the next check between bytecodes (a loop here; a C call such as sleep would not check).
        try:
            end = time.monotonic() + 1
            while time.monotonic() < end:
                pass
            report(outcome="oserror_only", message=str(e))
        except KeyboardInterrupt as e2:
            interrupted(e2)
"""


@pytest.mark.parametrize("mode", ["to_arrow", "preview", "reader"])
def test_sigint_stops_a_running_query(narrow, mode):
    r = _run_child(QUERY_CHILD, [mode, narrow, SLOW_SQL])
    print(f"{mode}: {r.get('latency', -1):.3f} s from SIGINT to KeyboardInterrupt")
    assert r["outcome"] == "interrupted", r
    assert r["latency"] < LATENCY_S, r
    if mode != "reader":
        assert r["status"] == "cancelled"


def test_sigint_stops_a_single_partition_query(narrow, tmp_path):
    body = QUERY_CHILD.replace("deltafunnel.Session()", "deltafunnel.Session(target_partitions=1)")
    r = _run_child(body, ["to_arrow", narrow, SLOW_SQL])
    assert r["outcome"] == "interrupted" and r["latency"] < LATENCY_S, r


def test_sigint_stops_a_running_sort(narrow):
    """A sort of all rows is one long call after its input is read; it polls the flag as it merges."""
    body = QUERY_CHILD.replace("deltafunnel.Session()", "deltafunnel.Session(target_partitions=1)")
    # Four copies of the table: a quiet machine sorts one copy in under a second,
    # which could end before the signal arrives.
    four = "SELECT * FROM t UNION ALL SELECT * FROM t UNION ALL SELECT * FROM t UNION ALL SELECT * FROM t"
    r = _run_child(body, ["to_arrow", narrow, f"SELECT * FROM ({four}) ORDER BY value, id DESC"], delay=0.5)
    print(f"sort: {r.get('latency', -1):.3f} s from SIGINT to KeyboardInterrupt")
    assert r["outcome"] == "interrupted" and r["latency"] < LATENCY_S, r


def test_queries_still_complete(narrow):
    s = deltafunnel.Session()
    t = s.delta_lake(str(narrow), name="t")
    assert t.to_arrow().num_rows == 1_000_000
    assert pa.table(t).num_rows == 1_000_000
    assert sum(b.num_rows for b in pa.RecordBatchReader._import_from_c_capsule(t.__arrow_c_stream__())) == 1_000_000
    assert "id" in t.preview(limit=3).text


# ---------------------------------------------------------------------------
# Arrow errors


@pytest.fixture(scope="module")
def corrupt(cli, tmp_path_factory):
    """A small table whose one data file has its middle overwritten."""
    path = run_datagen(cli, tmp_path_factory.mktemp("corrupt") / "t", 20_000)
    data = [os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs if f.endswith(".parquet")]
    assert len(data) == 1
    size = os.path.getsize(data[0])
    with open(data[0], "r+b") as f:
        f.seek(size // 2)
        f.write(b"\xff" * 4096)
    return path


def test_to_arrow_failure_is_a_delta_funnel_error(corrupt):
    t = deltafunnel.Session().delta_lake(str(corrupt), name="t")
    with pytest.raises(deltafunnel.DeltaFunnelError) as e:
        t.to_arrow()
    assert e.value.phase == "parquet"
    assert e.value.kind in {"checksum_mismatch", "parquet_format", "codec_error"}


def test_stream_consumers_see_phase_and_kind(corrupt):
    t = deltafunnel.Session().delta_lake(str(corrupt), name="t")
    with pytest.raises(OSError) as e:
        pa.table(t)
    assert str(e.value).startswith("[parquet/"), str(e.value)
    with pytest.raises(OSError) as e:
        for _ in pa.RecordBatchReader._import_from_c_capsule(t.__arrow_c_stream__()):
            pass
    assert str(e.value).startswith("[parquet/"), str(e.value)
    duckdb = pytest.importorskip("duckdb")
    with pytest.raises(duckdb.Error) as e:
        duckdb.sql("SELECT count(*) FROM t").fetchall()
    assert "[parquet/" in str(e.value)


# ---------------------------------------------------------------------------
# Writes


WRITE_CHILD = """
    conn, mode, path = sys.argv[1], sys.argv[2], sys.argv[3]
    parallel = int(sys.argv[4]) if len(sys.argv) > 4 else None
    s = deltafunnel.Session(default_mssql_connection_string=conn)
    t = s.delta_lake(path, name="t")
    print("started", flush=True)
    try:
        t.write_to_mssql(schema="dbo", table="target", load_mode=mode, parallel_connections=parallel)
        report(outcome="finished")
    except KeyboardInterrupt as e:
        interrupted(e)
"""


@pytest.mark.parametrize("mode,parallel", [("append_existing", 1), ("create_and_load", 1), ("replace", 1),
                                           ("create_and_load", 4), ("replace", 4)])
def test_sigint_cancels_a_write_and_leaves_the_target(narrow, mode, parallel):
    pytest.importorskip("pytds")
    from mssql_peer import Peer, peer_exec, peer_rows, peer_tables
    with Peer() as peer:
        if mode != "create_and_load":
            peer_exec(peer, "CREATE TABLE dbo.target (id bigint NOT NULL, value bigint NULL, flag bit NULL)",
                      "INSERT INTO dbo.target (id, value, flag) VALUES (-1, 1, 1), (-2, 2, 0)")
        r = _run_child(WRITE_CHILD, [peer.conn_str(), mode, narrow, parallel],
                       started=lambda: "INSERT BULK" in peer.trace_text(), delay=0.3)
        print(f"write {mode} x{parallel}: {r.get('latency', -1):.3f} s from SIGINT to KeyboardInterrupt")
        assert r["outcome"] == "interrupted", r
        assert r["latency"] < LATENCY_S, r
        assert r["status"] == "cancelled"
        assert r["error_kind"] == "mssql_write_phase"
        ctx = r["context"]
        assert ctx["batch_shaping"]["status"]["kind"] == "cancelled"
        assert ctx["report"]["batch_shaping"]["status"]["kind"] == "cancelled"
        assert ctx["cleanup"] in {"succeeded", "not_applicable"}
        # The abandoned session may still be unwinding in the peer: wait for it to go.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            tables = peer_tables(peer)
            count = peer_rows(peer, "SELECT COUNT_BIG(*) FROM dbo.target")[0][0] if "target" in tables else None
            if tables == ([] if mode == "create_and_load" else ["target"]) and count in (None, 2):
                break
            time.sleep(0.1)
        assert tables == ([] if mode == "create_and_load" else ["target"])  # no staging table left
        assert count == (None if mode == "create_and_load" else 2)


# ---------------------------------------------------------------------------
# The command-line program

# Sanitizer builds tear down slower; the bound is on signal to exit, teardown included.
CLI_EXIT_S = 1.0


def _signal_cli(cmd, signo, started, env=None, timeout=120):
    # As from a terminal: a run started in a shell's background inherits SIGINT ignored.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 60
        while not started() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.005)
        assert proc.poll() is None, proc.communicate()
        sent = time.monotonic()
        proc.send_signal(signo)
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, time.monotonic() - sent, out, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("signo,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_cli_preview_stops_on_signal(cli, narrow, signo, code):
    t0 = time.monotonic()
    rc, took, out, err = _signal_cli([cli, "preview", "--source", f"t={narrow}", "--sql", SLOW_SQL], signo,
                                     lambda: time.monotonic() - t0 > 0.7)
    print(f"cli preview {signo!r}: exit {rc} {took:.3f} s after the signal")
    assert rc == code, err
    assert "cancelled" in err
    assert took < CLI_EXIT_S, took


@pytest.mark.parametrize("signo,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_cli_load_stops_on_signal_and_rolls_back(cli, narrow, tmp_path, signo, code):
    pytest.importorskip("pytds")
    from mssql_peer import Peer, peer_rows, peer_tables
    job = tmp_path / "job.toml"
    job.write_text(textwrap.dedent(f'''
        [session]
        default_mssql_connection_string = "env:DF_TEST_MSSQL"

        [[sources]]
        name = "t"
        uri = "{narrow}"

        [[outputs]]
        from = "t"
        schema = "dbo"
        table = "target"
        load_mode = "create_and_load"
    '''))
    with Peer() as peer:
        env = dict(os.environ, DF_TEST_MSSQL=peer.conn_str())
        rc, took, out, err = _signal_cli([cli, "load", str(job)], signo,
                                         lambda: "INSERT BULK" in peer.trace_text(), env=env)
        print(f"cli load {signo!r}: exit {rc} {took:.3f} s after the signal")
        assert rc == code, err
        assert "cancelled" in err
        assert took < CLI_EXIT_S, took
        report = json.loads(out.strip().splitlines()[-1])
        failure = report["workflow"]["outputs"][0]["failure"]
        assert failure["context"]["batch_shaping"]["status"]["kind"] == "cancelled"
        deadline = time.monotonic() + 30
        while peer_tables(peer) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert peer_tables(peer) == []  # the staging table is gone, nothing was created


def test_sigint_during_a_statement_sends_attention(narrow):
    """A statement SQL Server is still running is cancelled with ATTENTION, not waited for.  The
    peer delays every reply (cleanup's too), so only the cancel itself is timed here."""
    pytest.importorskip("pytds")
    from mssql_peer import Peer, peer_exec, peer_rows
    with Peer("--fault-delay-ms", "1500") as peer:
        peer_exec(peer, "CREATE TABLE dbo.target (id bigint NOT NULL, value bigint NULL, flag bit NULL)",
                  "INSERT INTO dbo.target (id, value, flag) VALUES (-1, 1, 1)")
        marker = len(peer.trace_text())
        t0 = time.monotonic()
        r = _run_child(WRITE_CHILD, [peer.conn_str(), "append_existing", narrow],
                       started=lambda: "batch:" in peer.trace_text()[marker:], delay=0.3)
        took = time.monotonic() - t0
        assert r["outcome"] == "interrupted" and r["status"] == "cancelled", r
        assert "attention during delay" in peer.trace_text()
        assert r["context"]["batch_shaping"]["status"]["kind"] == "cancelled"
        assert peer_rows(peer, "SELECT COUNT_BIG(*) FROM dbo.target") == [(1,)]
        print(f"cancel during a delayed statement: {r['latency']:.3f} s to KeyboardInterrupt, child {took:.1f} s")
