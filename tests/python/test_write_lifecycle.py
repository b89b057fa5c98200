"""The load-mode lifecycle against the loopback peer's fault injection: for
each load mode x failure point, the target's final contents and the report
(status, partial_write_possible, cleanup) are exactly as docs/writes.md
documents them.  Nothing committed is lost, nothing half-written is
visible, and no staging table is left behind."""

import pytest

from mssql_peer import Peer, peer_exec, peer_rows, peer_tables

deltafunnel = pytest.importorskip("deltafunnel")
pa = pytest.importorskip("pyarrow")
deltalake = pytest.importorskip("deltalake")
pytest.importorskip("pytds")

ROWS = 20_000
OLD = [(-1, "old one"), (-2, "old two")]


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """20,000 rows in 3 files, so a load spans several batches."""
    path = tmp_path_factory.mktemp("lifecycle") / "src"
    for part in range(3):
        lo, hi = part * 7000, min((part + 1) * 7000, ROWS)
        t = pa.table({"id": pa.array(range(lo, hi), pa.int64()),
                      "name": pa.array([f"row {i}" for i in range(lo, hi)], pa.string())})
        deltalake.write_deltalake(str(path), t, mode="append")
    return path


def _session(peer, source, **opts):
    s = deltafunnel.Session(default_mssql_connection_string=peer.conn_str(), output_batch_size=2048, **opts)
    return s, s.delta_lake(str(source), name="src")


def _seed(peer):
    peer_exec(peer, "CREATE TABLE dbo.target (id bigint NULL, name nvarchar(max) NULL)",
              "INSERT INTO dbo.target (id, name) VALUES (-1, N'old one'), (-2, N'old two')")


def _contents(peer):
    if "target" not in peer_tables(peer):
        return None
    return sorted(peer_rows(peer, "SELECT id, name FROM dbo.target"))


def _expect_new(contents, extra=()):
    assert contents is not None
    assert len(contents) == ROWS + len(extra)
    assert contents[:len(extra)] == sorted(extra)


# (label, peer fault arguments, failing phase) — each injected once.
FAILURES = [
    ("connect", ["--fault-refuse-logins"], "connect"),
    ("prepare", ["--fault-fail-statement", "ELSE CAST=229"], "prepare_target_lifecycle"),
    ("writer_init", ["--fault-fail-statement", "INSERT BULK=4816"], "initialize_writer"),
    ("mid_stream_drop", ["--fault-drop-after-rows", "5000"], None),
    ("mid_stream_error", ["--fault-error-after-rows", "5000", "--fault-error-close"], None),
    ("finalize_error", ["--fault-error-after-rows", "15000"], None),
    ("validation", ["--fault-fail-statement", "COUNT_BIG=229", "--fault-repeat"], "validation"),
]

MODES = ["append_existing", "create_and_load", "replace"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("label,fault,phase", FAILURES, ids=[f[0] for f in FAILURES])
def test_failure_matrix(source, mode, label, fault, phase):
    with Peer(*fault) as peer:
        if mode != "create_and_load":
            if label == "connect":
                pass  # logins are refused: seeding goes through the same server, so skip it
            else:
                _seed(peer)
        before = _contents(peer) if label != "connect" else None
        s, t = _session(peer, source, validation_options={"target_validation_mode": "require"})
        with pytest.raises(deltafunnel.DeltaFunnelError) as e:
            t.write_to_mssql(schema="dbo", table="target", load_mode=mode)
        err = e.value
        assert err.kind == "mssql_write_phase", (err.phase, err.kind, str(err))
        if phase == "validation" and mode == "append_existing":
            phase = "prepare_target_lifecycle"  # require: the pre-write count fails before any row is sent
        if phase:
            assert err.phase == phase, str(err)
        ctx = err.context
        assert ctx["phase"] == err.phase
        assert ctx["partial_write_possible"] is False
        assert ctx["report"]["partial_write_possible"] is False
        if label == "connect":
            expected_cleanup = "not_applicable" if mode == "append_existing" else "not_attempted"
            assert ctx["cleanup"] == expected_cleanup
            return
        # The target is exactly as before: old rows for append/replace, absent for create.
        after = _contents(peer)
        if mode == "create_and_load":
            assert after is None
        else:
            assert after == before == sorted(OLD)
        # No staging table survives.
        assert [n for n in peer_tables(peer) if "__df_" in n] == []
        if label == "prepare":
            expected = "not_applicable" if mode == "append_existing" else "not_attempted"
            assert ctx["cleanup"] == expected
        else:
            assert ctx["cleanup"] == "succeeded", ctx
        assert ctx["cleanup_error"] is None


@pytest.mark.parametrize("mode", MODES)
def test_swap_failure_keeps_target(source, mode):
    pattern = {"append_existing": "COMMIT=1205", "create_and_load": "sp_rename=15225",
               "replace": "TRUNCATE=4712"}[mode]
    with Peer("--fault-fail-statement", pattern) as peer:
        if mode != "create_and_load":
            _seed(peer)
        s, t = _session(peer, source)
        with pytest.raises(deltafunnel.DeltaFunnelError) as e:
            t.write_to_mssql(schema="dbo", table="target", load_mode=mode)
        assert e.value.phase == "swap_target", str(e.value)
        ctx = e.value.context
        assert ctx["partial_write_possible"] is False
        assert ctx["cleanup"] == "succeeded"
        after = _contents(peer)
        if mode == "create_and_load":
            assert after is None
        else:
            assert after == sorted(OLD)
        assert [n for n in peer_tables(peer) if "__df_" in n] == []


@pytest.mark.parametrize("mode", MODES)
def test_success_per_mode(source, mode):
    with Peer() as peer:
        if mode != "create_and_load":
            _seed(peer)
        s, t = _session(peer, source)
        r = t.write_to_mssql(schema="dbo", table="target", load_mode=mode)
        assert r["partial_write_possible"] is False
        assert r["cleanup"] == ("not_applicable" if mode == "append_existing" else "not_attempted")
        assert r["validation_status"] == {"kind": "passed", "reason": None}
        assert r["output_row_count"] == {"kind": "exact", "value": ROWS}
        after = _contents(peer)
        if mode == "append_existing":
            _expect_new(after, OLD)
            assert r["target_row_count_before_write"] == {"kind": "exact", "value": 2}
            assert r["target_row_count"] == {"kind": "exact", "value": ROWS + 2}
        else:
            _expect_new(after)
            assert r["target_row_count"] == {"kind": "exact", "value": ROWS}
        assert [n for n in peer_tables(peer) if "__df_" in n] == []
        names = [p["phase_name"] for p in r["phase_timings"]]
        assert names[:2] == ["output_schema_planning", "sql_target_planning"]
        assert names[-3:] == ["finalize", "validation", "swap_target"]


def test_replace_keeps_indexes_constraints_and_grants_when_columns_match(source):
    """replace into an existing table with the same columns swaps the rows, not the table."""
    with Peer() as peer:
        peer_exec(peer, "CREATE TABLE dbo.target (id bigint NULL, name nvarchar(max) NULL, "
                        "CONSTRAINT pk_like UNIQUE (id))",
                  "INSERT INTO dbo.target (id, name) VALUES (-1, N'old one')")
        oid = peer_rows(peer, "SELECT OBJECT_ID(N'dbo.target')")[0][0]
        s, t = _session(peer, source)
        t.write_to_mssql(schema="dbo", table="target", load_mode="replace")
        assert peer_rows(peer, "SELECT OBJECT_ID(N'dbo.target')")[0][0] == oid  # same object: its metadata stays
        _expect_new(_contents(peer))
        assert "TRUNCATE TABLE" in peer.trace_text()


def test_replace_with_a_new_schema_renames(source):
    with Peer() as peer:
        peer_exec(peer, "CREATE TABLE dbo.target (other int NULL)", "INSERT INTO dbo.target (other) VALUES (7)")
        s, t = _session(peer, source)
        t.write_to_mssql(schema="dbo", table="target", load_mode="replace")
        _expect_new(_contents(peer))
        assert [n for n in peer_tables(peer) if "__df_" in n] == []


def test_create_and_load_refuses_existing_target(source):
    with Peer() as peer:
        _seed(peer)
        s, t = _session(peer, source)
        with pytest.raises(deltafunnel.DeltaFunnelError) as e:
            t.write_to_mssql(schema="dbo", table="target", load_mode="create_and_load")
        assert e.value.phase == "prepare_target_lifecycle"
        assert "already exists" in str(e.value)
        assert _contents(peer) == sorted(OLD)


def test_validation_unavailable_is_not_fatal_when_possible(source):
    with Peer("--fault-fail-statement", "COUNT_BIG=229", "--fault-repeat") as peer:
        _seed(peer)
        s, t = _session(peer, source)
        r = t.write_to_mssql(schema="dbo", table="target", load_mode="append_existing")
        assert r["validation_status"] == {"kind": "unavailable", "reason": "permission_unavailable"}
        _expect_new(_contents(peer), OLD)


def test_replace_requires_validation(source):
    with Peer() as peer:
        _seed(peer)
        s, t = _session(peer, source, validation_options={"target_validation_mode": "disabled"})
        with pytest.raises(deltafunnel.DeltaFunnelError) as e:
            t.write_to_mssql(schema="dbo", table="target", load_mode="replace")
        assert e.value.phase == "validation"
        assert "requires target validation" in str(e.value)
        ctx = e.value.context
        assert ctx["cleanup"] == "succeeded" and ctx["partial_write_possible"] is False
        assert ctx["validation_status"]["kind"] == "disabled"
        assert _contents(peer) == sorted(OLD)


def test_concurrent_replaces_wait_for_each_other(source):
    """Two replaces of one target: both succeed (the second waits for the lock) and the target is whole."""
    import threading
    with Peer() as peer:
        _seed(peer)
        errors, reports = [], []

        def run():
            try:
                s, t = _session(peer, source)
                reports.append(t.write_to_mssql(schema="dbo", table="target", load_mode="replace"))
            except Exception as exc:  # noqa: BLE001 - collected for the assertion
                errors.append(exc)

        threads = [threading.Thread(target=run) for _ in range(2)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(120)
        assert errors == []
        assert len(reports) == 2
        _expect_new(_contents(peer))


@pytest.mark.parametrize("mode", ["create_and_load", "replace"])
def test_parallel_connections_load_staging_atomically(source, mode):
    with Peer() as peer:
        if mode == "replace":
            _seed(peer)
        s, t = _session(peer, source)
        r = t.write_to_mssql(schema="dbo", table="target", load_mode=mode, parallel_connections=3)
        assert r["validation_status"]["kind"] == "passed"
        assert r["write_stats"]["rows_written"] == ROWS
        _expect_new(_contents(peer))
        assert peer.trace_text().count("WITH (TABLOCK)") >= 3
        assert [n for n in peer_tables(peer) if "__df_" in n] == []


def test_parallel_failure_drops_staging(source):
    with Peer("--fault-drop-after-rows", "3000") as peer:
        _seed(peer)
        s, t = _session(peer, source)
        with pytest.raises(deltafunnel.DeltaFunnelError) as e:
            t.write_to_mssql(schema="dbo", table="target", load_mode="replace", parallel_connections=2)
        ctx = e.value.context
        assert ctx["cleanup"] == "succeeded" and ctx["partial_write_possible"] is False
        assert _contents(peer) == sorted(OLD)
        assert [n for n in peer_tables(peer) if "__df_" in n] == []


def test_parallel_connections_are_validated(source):
    with Peer() as peer:
        s, t = _session(peer, source)
        for bad in (0, 17):
            with pytest.raises(deltafunnel.DeltaFunnelError) as e:
                t.write_to_mssql(schema="dbo", table="target", load_mode="replace", parallel_connections=bad)
            assert (e.value.phase, e.value.kind) == ("config", "invalid_option_value")
        with pytest.raises(TypeError):
            t.write_to_mssql(schema="dbo", table="target", load_mode="replace", parallel_connections=True)


def test_concurrent_appends_into_one_table_both_pass_validation(source):
    """Validation counts the rows each append inserted (the server's bulk row counts), not the table's growth,
    so two appends running at once into one table both succeed and the table holds both loads."""
    import threading
    with Peer() as peer:
        _seed(peer)
        results, errors = [None, None], [None, None]
        start = threading.Barrier(2)

        def load(i):
            s, t = _session(peer, source)
            start.wait()
            try:
                results[i] = t.write_to_mssql(schema="dbo", table="target", load_mode="append_existing")
            except Exception as e:  # noqa: BLE001 - reported by the assertions below
                errors[i] = e

        threads = [threading.Thread(target=load, args=(i,)) for i in range(2)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(timeout=300)
        assert errors == [None, None], [str(e) for e in errors if e]
        for r in results:
            assert r["validation_status"] == {"kind": "passed", "reason": None}
            assert r["output_row_count"] == {"kind": "exact", "value": ROWS}
        assert len(_contents(peer)) == 2 * ROWS + len(OLD)
        # the loads overlapped: for one of them the table grew by more than its own rows (the other's commit
        # fell between its counts), which is what the old after - before comparison refused
        growth = [r["target_row_count"]["value"] - r["target_row_count_before_write"]["value"] for r in results]
        assert max(growth) == 2 * ROWS, growth
