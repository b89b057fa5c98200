"""The reference implementation's SQL Server scenarios (the three load
modes, default and overridden connections, profiles, progress, write_all
with shared aliases, failed and skipped outputs), re-expressed against the
loopback peer, plus type mapping round trips for the schema_options
policies."""

import datetime
import decimal

import pytest

from mssql_peer import Peer, peer_exec, peer_rows, peer_tables

deltafunnel = pytest.importorskip("deltafunnel")
pa = pytest.importorskip("pyarrow")
deltalake = pytest.importorskip("deltalake")
pytest.importorskip("pytds")

THREE = "SELECT CAST(101 AS BIGINT) AS id UNION ALL SELECT CAST(102 AS BIGINT) UNION ALL SELECT CAST(103 AS BIGINT)"


@pytest.fixture()
def peer():
    with Peer() as p:
        yield p


@pytest.fixture(scope="module")
def three_rows(tmp_path_factory):
    path = tmp_path_factory.mktemp("ref") / "three"
    deltalake.write_deltalake(str(path), pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    return path


def test_append_existing_writes_two_batches(peer, three_rows):
    peer_exec(peer, "CREATE TABLE dbo.t (id bigint NULL)", "INSERT INTO dbo.t (id) VALUES (0)")
    s = deltafunnel.Session(default_mssql_connection_string=peer.conn_str(), output_batch_size=2,
                            target_partitions=1)
    t = s.delta_lake(str(three_rows), name="src")
    r = t.write_to_mssql(schema="dbo", table="t", load_mode="append_existing")
    assert r["write_stats"]["rows_written"] == 3 and r["write_stats"]["batches_written"] == 2
    assert r["cleanup"] == "not_applicable"
    assert r["output_row_count"] == {"kind": "exact", "value": 3}
    assert r["target_row_count_before_write"] == {"kind": "exact", "value": 1}
    assert r["target_row_count_after_write"] == {"kind": "exact", "value": 4}
    assert r["target_row_count"] == {"kind": "exact", "value": 4}
    assert r["validation_status"] == {"kind": "passed", "reason": None}
    assert sorted(peer_rows(peer, "SELECT id FROM dbo.t")) == [(0,), (1,), (2,), (3,)]


def test_create_and_load_writes_two_batches(peer, three_rows):
    s = deltafunnel.Session(default_mssql_connection_string=peer.conn_str(), output_batch_size=2,
                            target_partitions=1)
    t = s.delta_lake(str(three_rows), name="src")
    r = t.write_to_mssql(schema="dbo", table="t", load_mode="create_and_load")
    assert r["write_stats"]["batches_written"] == 2
    assert r["cleanup"] == "not_attempted"
    assert r["target_row_count"] == {"kind": "exact", "value": 3}
    assert r["validation_status"]["kind"] == "passed"
    assert sorted(peer_rows(peer, "SELECT id FROM dbo.t")) == [(1,), (2,), (3,)]


def test_datetime_policy_uses_legacy_rounding(peer):
    s = deltafunnel.Session(default_mssql_connection_string=peer.conn_str(),
                            schema_options={"timestamp_policy": "datetime"})
    t = s.table_from_sql("SELECT CAST('2026-06-03 23:36:33.684582' AS TIMESTAMP) AS ts")
    t.write_to_mssql(schema="dbo", table="ts", load_mode="create_and_load")
    (value,), = peer_rows(peer, "SELECT CAST(ts AS nvarchar(40)) FROM dbo.ts")
    assert value.startswith("2026-06-03 23:36:33.687")


def test_orchestrator_create_and_load_progress_sequence(peer, capfd):
    s = deltafunnel.Session(default_mssql_connection_string=peer.conn_str())
    t = s.table_from_sql(THREE)
    r = t.write_to_mssql(schema="dbo", table="q", load_mode="create_and_load", progress=True)
    assert r["output_row_count"] == {"kind": "exact", "value": 3}
    err = capfd.readouterr().err
    labels = ["Writing to SQL Server", "Planning output", "Preparing data stream", "Connecting to SQL Server",
              "Preparing target table", "Writing to SQL Server", "Validating write", "Completed"]
    pos = 0
    for label in labels:
        pos = err.find(label, pos)
        assert pos >= 0, (label, err)
    assert "3 rows, " in err and " batch" in err


def test_execute_with_default_connection_and_profile(peer):
    s = deltafunnel.Session(default_mssql_connection_string=peer.conn_str())
    r = s.table_from_sql(THREE).write_to_mssql(schema="dbo", table="d", load_mode="create_and_load",
                                               execution_profile=True)
    assert r["output_name"] == "d" and r["run_mode"] == "execute"
    assert r["connection_source"] == "context_default"
    assert r["cleanup"] == "not_attempted" and r["partial_write_possible"] is False
    prof = r["execution_profile"]
    assert prof["scope"] == "mssql_output" and prof["outcome"] == "success"
    assert prof["operators"] and prof["delta_funnel_row_limit"] is None
    assert r["output_row_count"]["value"] == 3 and r["target_row_count"]["value"] == 3
    assert r["write_stats"]["rows_written"] == 3


def test_execute_with_connection_override(peer):
    s = deltafunnel.Session()
    r = s.table_from_sql(THREE).write_to_mssql(schema="dbo", table="o", load_mode="create_and_load",
                                               connection_string=peer.conn_str(), name="named_output")
    assert r["connection_source"] == "target_override"
    assert r["execution_profile"] is None
    assert r["write_stats"]["output_name"] == "named_output"


def test_replace_existing_target(peer):
    peer_exec(peer, "CREATE TABLE dbo.r (id bigint NULL)", "INSERT INTO dbo.r (id) VALUES (1), (2)")
    s = deltafunnel.Session(default_mssql_connection_string=peer.conn_str())
    t = s.table_from_sql("SELECT CAST(7 AS BIGINT) AS id UNION ALL SELECT CAST(8 AS BIGINT)")
    r = t.write_to_mssql(schema="dbo", table="r", load_mode="replace")
    assert r["validation_status"]["kind"] == "passed"
    assert r["target_row_count"] == {"kind": "exact", "value": 2}
    assert sorted(peer_rows(peer, "SELECT id FROM dbo.r")) == [(7,), (8,)]
    assert peer_rows(peer, "SELECT lock_on_bulk_load FROM sys.tables WHERE name = N'r'") == [(0,)]


def _progress_lines(text):
    return [line for line in text.splitlines() if line.strip()]


def test_write_all_shared_alias_with_default_and_override(peer, capfd):
    s = deltafunnel.Session(default_mssql_connection_string=peer.conn_str())
    big = s.table_from_sql("SELECT CAST(1 AS BIGINT) AS id, 'x' AS tag").alias("big_orders")
    o1 = s.table_from_sql("SELECT id FROM big_orders").to_mssql(schema="dbo", table="w1", load_mode="create_and_load")
    o2 = s.table_from_sql("SELECT id, tag FROM big_orders").to_mssql(
        schema="dbo", table="w2", load_mode="create_and_load", connection_string=peer.conn_str(), name="second")
    r = s.write_all([o1, o2], progress=True)
    assert (r["succeeded_count"], r["failed_count"], r["skipped_count"]) == (2, 0, 0)
    assert r["all_succeeded"] is True and r["sources"] == []
    assert r["cache"]["kind"] == "cache_aliases"
    (alias,) = r["cache"]["aliases"]
    assert alias["alias"] == "big_orders" and alias["output_indexes"] == [0, 1]
    assert alias["status"] == "materialized_and_restored"
    assert len(alias["phase_timings"]) == 8
    outs = r["workflow"]["outputs"]
    assert [o["kind"] for o in outs] == ["succeeded", "succeeded"]
    assert outs[1]["connection_source"] == "target_override"
    assert all(o["validation_status"]["kind"] == "passed" and o["output_row_count"]["value"] == 1 for o in outs)
    err = capfd.readouterr().err
    assert "Caching shared data" in err
    assert "Output 1/2" in err and "Output 2/2" in err and "1 row, 1 batch" in err
    assert _progress_lines(err)[-1].startswith("Writing outputs to SQL Server - Completed")


def test_write_all_reports_failed_and_skipped(peer, capfd):
    s = deltafunnel.Session(default_mssql_connection_string=peer.conn_str())
    t = s.table_from_sql(THREE)
    o1 = t.to_mssql(schema="dbo", table="ok", load_mode="create_and_load")
    o2 = t.to_mssql(schema="dbo", table="missing", load_mode="append_existing", name="failing_output")
    o3 = t.to_mssql(schema="dbo", table="later", load_mode="create_and_load")
    r = s.write_all([o1, o2, o3], options={"cache_mode": "disabled"}, progress=True)
    assert (r["succeeded_count"], r["failed_count"], r["skipped_count"]) == (1, 1, 1)
    assert r["cache"]["kind"] == "disabled"
    failed, skipped = r["workflow"]["outputs"][1], r["workflow"]["outputs"][2]
    assert failed["kind"] == "failed" and "does not exist" in failed["failure"]["error"]
    assert failed["failure"]["context"]["phase"] == "prepare_target_lifecycle"
    assert skipped["kind"] == "skipped"
    assert skipped["skipped"]["reason"] == {"kind": "previous_output_failed", "failed_output_name": "failing_output"}
    assert "later" not in peer_tables(peer)
    assert _progress_lines(capfd.readouterr().err)[-1].startswith(
        "Writing outputs to SQL Server - Completed with failures")


def test_write_all_replace_outputs_including_empty(peer):
    peer_exec(peer, "CREATE TABLE dbo.full_t (id bigint NULL)", "INSERT INTO dbo.full_t (id) VALUES (5)")
    s = deltafunnel.Session(default_mssql_connection_string=peer.conn_str())
    full = s.table_from_sql(THREE).to_mssql(schema="dbo", table="full_t", load_mode="replace")
    empty = s.table_from_sql("SELECT CAST(1 AS BIGINT) AS id WHERE 1 = 0").to_mssql(
        schema="dbo", table="empty_t", load_mode="replace")
    r = s.write_all([full, empty])
    assert r["all_succeeded"] is True
    assert sorted(peer_rows(peer, "SELECT id FROM dbo.full_t")) == [(101,), (102,), (103,)]
    assert "empty_t" in peer_tables(peer)
    assert peer_rows(peer, "SELECT COUNT_BIG(*) FROM dbo.empty_t") == [(0,)]


def test_stream_benchmark_caches_and_never_connects():
    s = deltafunnel.Session(default_mssql_connection_string="server=tcp:127.0.0.1,1;user id=u;password=p")
    s.table_from_sql(THREE).alias("shared_benchmark")
    o1 = s.table_from_sql("SELECT id FROM shared_benchmark").to_mssql(schema="dbo", table="a", load_mode="replace")
    o2 = s.table_from_sql("SELECT id + 1 AS id FROM shared_benchmark").to_mssql(
        schema="dbo", table="b", load_mode="replace")
    r = s.write_all_for_stream_benchmark([o1, o2], execution_profile=True)
    assert r["all_succeeded"] is True
    (alias,) = r["cache"]["aliases"]
    assert alias["alias"] == "shared_benchmark" and alias["status"] == "materialized_and_restored"
    assert alias["execution_profile"]["scope"] == "write_all_cache_alias"
    for out in r["workflow"]["outputs"]:
        rep = out["report"]
        assert rep["write_stats"]["rows_written"] == 0 and rep["output_row_count"]["value"] == 3
        timings = {p["phase_name"]: p["status"]["kind"] for p in rep["phase_timings"]}
        assert timings["sql_write"] == "not_started" and timings["finalize"] == "not_started"
        assert rep["execution_profile"]["scope"] == "mssql_output"


def test_type_mapping_round_trip(peer, tmp_path):
    path = tmp_path / "types"
    table = pa.table({
        "b": pa.array([True, None]), "i8": pa.array([-5, None], pa.int8()), "i32": pa.array([7, 8], pa.int32()),
        "f32": pa.array([1.5, None], pa.float32()),
        "f64": pa.array([2.25, -1.0], pa.float64()),
        "dec": pa.array([decimal.Decimal("12.34"), None], pa.decimal128(10, 2)),
        "d": pa.array([datetime.date(2024, 2, 29), None], pa.date32()),
        "ts": pa.array([datetime.datetime(2024, 1, 2, 3, 4, 5, 123456), None], pa.timestamp("us")),
        "s": pa.array(["ünï ✓", None]), "bin": pa.array([b"\x00\xff", None]),
    })
    deltalake.write_deltalake(str(path), table)
    s = deltafunnel.Session(default_mssql_connection_string=peer.conn_str())
    t = s.delta_lake(str(path), name="types")
    r = t.write_to_mssql(schema="dbo", table="types", load_mode="create_and_load")
    assert r["validation_status"]["kind"] == "passed"
    cols = dict(peer_rows(peer, "SELECT c.name, ty.name FROM sys.columns AS c INNER JOIN sys.types AS ty "
                                "ON ty.user_type_id = c.user_type_id WHERE c.object_id = OBJECT_ID(N'dbo.types')"))
    assert cols == {"b": "bit", "i8": "smallint", "i32": "int", "f32": "real", "f64": "float", "dec": "decimal", "d": "date", "ts": "datetime2",
                    "s": "nvarchar", "bin": "varbinary"}
    rows = peer_rows(peer, "SELECT i32, dec, s, bin FROM dbo.types ORDER BY i32")
    assert rows[0] == (7, decimal.Decimal("12.34"), "ünï ✓", b"\x00\xff")


def test_observed_nvarchar_narrows_the_final_column(peer):
    s = deltafunnel.Session(default_mssql_connection_string=peer.conn_str(),
                            schema_options={"string_policy": "observed_nvarchar"})
    t = s.table_from_sql("SELECT 'abc' AS s UNION ALL SELECT 'abcdefghij' UNION ALL SELECT '✓✓'")
    r = t.write_to_mssql(schema="dbo", table="obs", load_mode="create_and_load")
    assert r["validation_status"]["kind"] == "passed"
    assert peer_rows(peer, "SELECT c.max_length FROM sys.columns AS c WHERE c.object_id = OBJECT_ID(N'dbo.obs')") \
        == [(20,)]  # nvarchar(10): bytes as SQL Server reports them
    assert sorted(peer_rows(peer, "SELECT s FROM dbo.obs")) == [("abc",), ("abcdefghij",), ("✓✓",)]


def test_bounded_nvarchar_rejects_long_values_before_sending(peer):
    s = deltafunnel.Session(default_mssql_connection_string=peer.conn_str(),
                            schema_options={"string_policy": {"nvarchar": 3}})
    t = s.table_from_sql("SELECT 'abcd' AS s")
    with pytest.raises(deltafunnel.DeltaFunnelError) as e:
        t.write_to_mssql(schema="dbo", table="short", load_mode="create_and_load")
    assert e.value.phase == "write_batch"
    assert e.value.context["diagnostics"][0]["code"] == "value_too_long"
    assert "short" not in peer_tables(peer)
    assert "abcd" not in str(e.value)


class _InterruptingStderr:
    """A stderr whose third write raises KeyboardInterrupt (as Ctrl-C during a progress update would)."""

    def __init__(self):
        self.calls = 0
        self.text = []

    def write(self, s):
        self.calls += 1
        if self.calls == 3:
            raise KeyboardInterrupt()
        self.text.append(s)
        return len(s)

    def flush(self):
        pass

    def isatty(self):
        return False


def test_interrupted_progress_finishes_the_write_then_reraises(peer, monkeypatch):
    import sys
    fake = _InterruptingStderr()
    monkeypatch.setattr(sys, "stderr", fake)
    s = deltafunnel.Session(default_mssql_connection_string=peer.conn_str())
    with pytest.raises(KeyboardInterrupt) as e:
        s.table_from_sql(THREE).write_to_mssql(schema="dbo", table="intr", load_mode="create_and_load", progress=True)
    assert e.value.deltafunnel_operation_status == "completed"
    assert "DeltaFunnel action status: completed; the Python result was not delivered." in "".join(fake.text)
    assert sorted(peer_rows(peer, "SELECT id FROM dbo.intr")) == [(101,), (102,), (103,)]
    fake.calls = 0
    o1 = s.table_from_sql(THREE).to_mssql(schema="dbo", table="missing", load_mode="append_existing")
    with pytest.raises(KeyboardInterrupt) as e:
        s.write_all([o1], progress=True)
    assert e.value.deltafunnel_operation_status == "completed_with_failures"
    assert e.value.deltafunnel_operation_report["failed_count"] == 1
