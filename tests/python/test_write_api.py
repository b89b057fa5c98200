"""SQL Server output API without a server: argument validation with the
reference's (phase, kind) and messages, reprs, dry-run reports and
write_all option checks."""

import inspect

import pytest

deltafunnel = pytest.importorskip("deltafunnel")
pa = pytest.importorskip("pyarrow")
deltalake = pytest.importorskip("deltalake")

CS = "server=tcp:127.0.0.1,1;user id=sa;password=Sup3r-Secret-Pw!"


@pytest.fixture(scope="module")
def src(tmp_path_factory):
    path = tmp_path_factory.mktemp("api") / "orders"
    deltalake.write_deltalake(str(path), pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": ["a", "b", None]}))
    return path


@pytest.fixture()
def s(src):
    session = deltafunnel.Session(default_mssql_connection_string=CS)
    session.delta_lake(str(src), name="orders")
    return session


def _err(fn):
    with pytest.raises(deltafunnel.DeltaFunnelError) as e:
        fn()
    return e.value


def test_signatures_match_the_reference():
    assert str(inspect.signature(deltafunnel.Table.write_to_mssql)) == (
        "(self, /, *, schema, table, load_mode, dry_run=None, name=None, connection_string=None, progress=None, "
        "execution_profile=False, ranked_profile=None, parallel_connections=None)")  # ours: the last one
    assert str(inspect.signature(deltafunnel.Table.to_mssql)) == (
        "(self, /, *, schema, table, load_mode, name=None, connection_string=None)")


def test_to_mssql_validates_targets(s):
    t = s.table_from_sql("SELECT * FROM orders")
    e = _err(lambda: t.to_mssql(schema="a.b", table="x", load_mode="replace"))
    assert (e.phase, e.kind) == ("config", "dotted_target_name")
    assert str(e) == "`schema` must be passed separately and must not contain `.`"
    e = _err(lambda: t.to_mssql(schema=" ", table="x", load_mode="replace"))
    assert (e.phase, e.kind) == ("mssql_target_config", "mssql_target_config")
    assert str(e) == "MSSQL target configuration error for option `target.schema`: schema must not be empty"
    e = _err(lambda: t.to_mssql(schema="dbo", table="x", load_mode="upsert"))
    assert (e.phase, e.kind, str(e)) == ("config", "invalid_load_mode", "invalid `load_mode` value `upsert`")
    e = _err(lambda: t.to_mssql(schema="dbo", table="x", load_mode="replace", connection_string=""))
    assert (e.phase, e.kind) == ("mssql_target_config", "mssql_target_config")
    with pytest.raises(TypeError):
        t.to_mssql(schema="dbo", table="x")
    with pytest.raises(TypeError):
        t.to_mssql("dbo", "x", "replace")


def test_output_spec_repr_has_no_connection(s):
    o = s.table_from_sql("SELECT id FROM orders").to_mssql(schema="dbo", table="x", load_mode="replace",
                                                            connection_string=CS, name="nm")
    assert repr(o) == ('deltafunnel.MssqlOutputSpec(name="nm", source_table="table_1", schema="dbo", table="x", '
                       'load_mode="replace")')
    assert "Secret" not in repr(o)


def test_write_dry_run_report(s):
    t = s.table_from_sql("SELECT id, name FROM orders WHERE id > 1")
    r = t.write_to_mssql(schema="dbo", table="x", load_mode="create_and_load", dry_run=True)
    assert r["run_mode"] == "dry_run"
    assert r["status"] == {"kind": "dry_run_planned", "reason": None, "validation": None}
    assert r["validation_status"] == {"kind": "skipped", "reason": "dry_run"}
    assert r["output_row_count"] == {"kind": "unavailable", "reason": "not_executed", "value": None}
    assert r["dry_run"] == {"bulk_writer_started": False, "row_production_started": False,
                            "sql_server_contacted": False, "table_lifecycle_started": False}
    assert r["sql_identity"]["state"] == "present" and len(r["sql_identity"]["hash"]) == 16
    assert r["used_source_names"] == ["orders"] and r["source_usage_status"] == "used"
    assert [p["phase_name"] for p in r["phase_timings"]] == [
        "lazy_sql_planning", "output_schema_planning", "sql_target_planning", "query_execution", "batch_shaping",
        "sql_write", "finalize", "validation"]
    assert r["target_schema_plan"] == {"diagnostic_count": 0, "output_field_count": 2}
    assert r["output_schema"][0] == {"index": 0, "name": "id", "arrow_type": "Int64", "nullable": True}
    assert "execution_profile" not in r


def test_dry_run_with_profile_is_rejected_first(s):
    t = s.table_from_sql("SELECT id FROM orders")
    e = _err(lambda: t.write_to_mssql(schema="dbo", table="x", load_mode="replace", dry_run=True,
                                      execution_profile=True))
    assert (e.phase, e.kind) == ("config", "invalid_option_value")
    with pytest.raises(TypeError):
        t.write_to_mssql(schema="dbo", table="x", load_mode="replace", execution_profile=1)
    with pytest.raises(TypeError):
        t.write_to_mssql(schema="dbo", table="x", load_mode="replace", progress="always")


def test_missing_connection_fails_planning(src):
    s = deltafunnel.Session()
    t = s.delta_lake(str(src), name="orders")
    for dry in (True, False):
        e = _err(lambda: t.write_to_mssql(schema="dbo", table="x", load_mode="replace", dry_run=dry))
        assert (e.phase, e.kind) == ("mssql_target_config", "missing_mssql_connection")
        assert str(e) == "MSSQL target for output `x` has no effective connection"


def test_schema_planning_errors(src, tmp_path):
    s = deltafunnel.Session(default_mssql_connection_string=CS)
    s.delta_lake(str(src), name="orders")
    e = _err(lambda: s.table_from_sql("SELECT id FROM orders").write_to_mssql(
        schema="dbo", table="x" * 200, load_mode="create_and_load", dry_run=True))
    assert (e.phase, e.kind) == ("mssql_ddl_planning", "mssql_ddl_target_identifier")
    assert "identifier is 200 characters; maximum is 128" in str(e)
    path = tmp_path / "nested"
    deltalake.write_deltalake(str(path), pa.table({"s": pa.array([{"a": 1}], pa.struct([("a", pa.int64())]))}))
    t = s.delta_lake(str(path), name="nested")
    e = _err(lambda: t.write_to_mssql(schema="dbo", table="x", load_mode="create_and_load", dry_run=True))
    assert (e.phase, e.kind) == ("mssql_schema_planning", "mssql_schema_planning")
    assert str(e) == "MSSQL schema planning error for output `x`: arrow-sql-server returned 1 diagnostic(s)"
    assert e.context["diagnostics"][0]["code"] == "unsupported_arrow_type"
    assert e.context["diagnostics"][0]["field"] == {"index": 0, "name": "s"}


def test_observed_policies_plan(src):
    s = deltafunnel.Session(default_mssql_connection_string=CS,
                            schema_options={"string_policy": "observed_nvarchar", "binary_policy": "observed_varbinary"})
    t = s.delta_lake(str(src), name="orders")
    r = t.write_to_mssql(schema="dbo", table="x", load_mode="create_and_load", dry_run=True)
    assert r["status"]["kind"] == "dry_run_planned"


def test_write_all_validation(s):
    o = s.table_from_sql("SELECT id FROM orders").to_mssql(schema="dbo", table="x", load_mode="replace")
    cases = [
        ({"cache_mode": "explicit"}, "invalid_option_combination",
         "`cache_mode=explicit` and `cache_aliases` must be supplied together"),
        ({"cache_aliases": "abc"}, "invalid_option_value",
         "`cache_aliases` must be a non-empty sequence of non-empty strings"),
        ({"cache_aliases": ["a"], "cache_mode": "auto"}, "invalid_option_combination", None),
        ({"profile": 1}, "unknown_option", "unknown write_all option `profile`"),
        ({"cache_mode": 3}, "invalid_option_value", "`cache_mode` must be a string"),
        ({"cache_mode": "x"}, "invalid_option_value", "invalid `cache_mode` value"),
        ({"cache_mode": "explicit", "cache_aliases": []}, "invalid_option_value", None),
        ({"cache_mode": "explicit", "cache_aliases": [" "]}, "invalid_option_value", None),
        ({1: 2}, "invalid_option_name", "option names must be strings"),
        ({"cache_memory_budget_bytes": -1}, "invalid_option_value", None),
        ({"cache_memory_budget_bytes": True}, "invalid_option_value", None),
    ]
    for options, kind, message in cases:
        e = _err(lambda: s.write_all([o], options=options))
        assert (e.phase, e.kind) == ("config", kind), (options, e.phase, e.kind)
        if message:
            assert str(e) == message
    e = _err(lambda: s.write_all([o], options={"cache_mode": "explicit", "cache_aliases": ["nope"]}))
    assert (e.phase, e.kind) == ("mssql_workflow_planning", "mssql_workflow_planning")
    assert "unknown registered alias `nope`" in str(e)
    e = _err(lambda: s.write_all([o], options={}, dry_run=True))
    assert str(e) == "`options` is only supported for execute `write_all` calls"
    e = _err(lambda: s.write_all([o, o]))
    assert str(e) == ("MSSQL workflow planning error: write_all output names must be unique; "
                      "duplicate output name `x`")
    with pytest.raises(TypeError):
        s.write_all(["not a spec"])
    with pytest.raises(TypeError):
        s.write_all([o], execution_profile=None)


def test_write_all_rejects_specs_of_another_session(s, src):
    other = deltafunnel.Session(default_mssql_connection_string=CS)
    t = other.delta_lake(str(src), name="orders")
    o = t.to_mssql(schema="dbo", table="x", load_mode="replace")
    e = _err(lambda: s.write_all([o]))
    assert (e.phase, e.kind, str(e)) == ("config", "output_session_mismatch",
                                         "all output specs must belong to this Session")


def test_empty_write_all(s, capsys):
    r = s.write_all([], progress=True)
    assert r["output_count"] == 0 and r["all_succeeded"] is True
    assert r["cache"] == {"aliases": [], "kind": "no_cache", "reason": "fewer_than_two_outputs",
                          "skipped_candidates": []}
    assert capsys.readouterr().err == ""
    d = s.write_all([], dry_run=True)
    assert d["status"] == {"kind": "no_op", "reason": "not_executed"}


def test_write_all_dry_run_report(src, tmp_path):
    s = deltafunnel.Session(default_mssql_connection_string=CS)
    s.delta_lake(str(src), name="orders")
    other = tmp_path / "other"
    deltalake.write_deltalake(str(other), pa.table({"k": pa.array([1], pa.int32())}))
    s.delta_lake(str(other), name="unused")
    shared = s.table_from_sql("SELECT id FROM orders").alias("shared")
    o1 = s.table_from_sql("SELECT id FROM shared WHERE id > 1").to_mssql(schema="dbo", table="a", load_mode="replace")
    o2 = shared.to_mssql(schema="dbo", table="b", load_mode="create_and_load")
    r = s.write_all([o1, o2], dry_run=True)
    assert r["run_mode"] == "dry_run" and r["status"] == {"kind": "success", "reason": None}
    assert r["output_count"] == 2 and len(r["outputs"]) == 2
    assert [p["phase_name"] for p in r["phase_timings"]] == ["output_planning", "source_reporting"]
    by_name = {x["source_name"]: x for x in r["sources"]}
    assert by_name["orders"]["usage_status"] == "used"
    assert by_name["orders"]["used_by_output_names"] == ["a", "b"]
    assert by_name["unused"]["usage_status"] == "not_used"
    assert by_name["orders"]["file_count"] == {"kind": "unavailable", "reason": "cost_avoidance", "value": None}
    assert by_name["orders"]["provider_stats_reason"] == "not_executed"
    assert by_name["orders"]["protocol"]["min_reader_version"] == 1
    assert r["query_used_source_scan_metadata_exhausted"] is False


def test_ranked_profile_keeps_the_operation_error_primary(s, tmp_path):
    t = s.table_from_sql("SELECT id FROM orders")
    cfg = deltafunnel.RankedProfileConfig(str(tmp_path / "r.html"))
    # No server listens at CS: the write's own connection error is raised, not a profile error.
    e = _err(lambda: t.write_to_mssql(schema="dbo", table="x", load_mode="replace", ranked_profile=cfg))
    assert e.phase != "ranked_profile" and e.kind == "mssql_write_phase"
    o = t.to_mssql(schema="dbo", table="x", load_mode="replace")
    # The stream benchmark never connects, so it succeeds and writes the report.
    s.write_all_for_stream_benchmark([o], ranked_profile=cfg)
    assert (tmp_path / "r.html").is_file()
    with pytest.raises(TypeError):
        t.write_to_mssql(schema="dbo", table="x", load_mode="replace", ranked_profile="path")


def test_write_all_cache_failure_maps_phase_kind_and_context(s):
    s.table_from_sql("SELECT id, name FROM orders").alias("shared")
    o1 = s.table_from_sql("SELECT id FROM shared").to_mssql(schema="dbo", table="a", load_mode="replace")
    o2 = s.table_from_sql("SELECT name FROM shared").to_mssql(schema="dbo", table="b", load_mode="replace")
    e = _err(lambda: s.write_all([o1, o2], options={"cache_memory_budget_bytes": 0,
                                                     "cache_spill_directory": "/nonexistent/spill"}))
    assert (e.phase, e.kind) == ("write_all_cache", "write_all_cache_failed")
    ctx = e.context
    assert ctx["workflow"] is None
    (alias,) = ctx["aliases"]
    assert alias["alias"] == "shared" and alias["status"] == "failed"
    assert alias["failed_phase"] == "cache_alias_execute_collect"
    assert ctx["primary_failed_alias_table_id"] == alias["table_id"]
    kinds = {p["phase_name"]: p["status"]["kind"] for p in alias["phase_timings"]}
    assert kinds["cache_alias_execute_collect"] == "failed"
    assert kinds["cache_alias_materialization_total"] == "failed"
    assert kinds["cache_alias_install"] == "not_started"
    # Caching disabled: the same outputs only need the (unreachable) server.
    r = s.write_all_for_stream_benchmark([o1, o2], options={"cache_mode": "disabled"})
    assert r["all_succeeded"] is True and r["cache"]["kind"] == "disabled"


def test_auto_cache_keeps_the_deepest_shared_alias(s):
    s.table_from_sql("SELECT id, name FROM orders").alias("base")
    s.table_from_sql("SELECT id FROM base WHERE id > 1").alias("deeper")
    o1 = s.table_from_sql("SELECT id FROM deeper").to_mssql(schema="dbo", table="a", load_mode="replace")
    o2 = s.table_from_sql("SELECT id + 1 AS id FROM deeper").to_mssql(schema="dbo", table="b", load_mode="replace")
    r = s.write_all_for_stream_benchmark([o1, o2])
    assert [a["alias"] for a in r["cache"]["aliases"]] == ["deeper"]
    (skipped,) = r["cache"]["skipped_candidates"]
    assert skipped["alias"] == "base"
    assert skipped["reason"]["kind"] == "covered_by_deeper_shared_alias"
    assert [o["output_row_count"]["value"] for o in r["workflow"]["outputs"]] == [2, 2]
    e = _err(lambda: s.write_all([o1, o2], options={"cache_mode": "explicit", "cache_aliases": ["base", "BASE"]}))
    assert "duplicate alias" in str(e)
