"""Delta sources, derived tables and aliases: registration, ids and names,
reprs, redaction, error (phase, kind) pairs, concurrency."""

import os
import threading

import pytest

import deltafunnel
from deltafunnel import DeltaFunnelError


def dfe(fn, phase, kind, message=None):
    with pytest.raises(DeltaFunnelError) as info:
        fn()
    err = info.value
    assert (err.phase, err.kind) == (phase, kind), (err.phase, err.kind, err.message)
    if message is not None:
        assert err.message == message
    return err


def test_delta_lake_registers_named_source_and_returns_table(session, mixed_table):
    t = session.delta_lake(str(mixed_table), name="orders")
    assert isinstance(t, deltafunnel.Table)
    uri = "file://" + os.path.realpath(mixed_table) + "/"
    assert repr(t) == f'deltafunnel.Table(id=0, kind="delta_source", name="orders", source_uri="{uri}", snapshot_version=0)'
    assert repr(session) == 'deltafunnel.Session(sources=["orders"], derived_tables=[])'
    names = [c["name"] for c in t.schema]
    assert names[:3] == ["id", "customer_id", "quantity"] and names[-1] == "region"
    assert t.schema[0] == {"index": 0, "name": "id", "arrow_type": "Int64", "nullable": False}


def test_delta_lake_pending_source_alias_registers_source(session, mixed_table):
    p = session.delta_lake("file://" + str(mixed_table))
    assert isinstance(p, deltafunnel.PendingDeltaSource)
    assert repr(p) == f'deltafunnel.PendingDeltaSource(source_uri="file://{mixed_table}", snapshot_version=None)'
    assert repr(session) == "deltafunnel.Session(sources=[], derived_tables=[])"
    t = p.alias("parts")
    assert repr(t).startswith('deltafunnel.Table(id=0, kind="delta_source", name="parts"')
    t2 = p.alias("parts2")
    assert "id=1" in repr(t2)
    pinned = session.delta_lake(str(mixed_table), version=0)
    assert repr(pinned).endswith("snapshot_version=0)")


def test_pending_delta_source_defers_progress_selection_until_alias(session, mixed_table, capsys):
    p = session.delta_lake(str(mixed_table), progress=True)
    assert capsys.readouterr().err == ""
    p.alias("quiet", progress=False)
    assert capsys.readouterr().err == ""
    p.alias("loud", progress=True)
    err = capsys.readouterr().err
    assert "Completed" in err
    assert str(mixed_table) not in err


def test_delta_lake_preserves_duplicate_alias_error(session, mixed_table):
    session.delta_lake(str(mixed_table), name="orders")
    dfe(lambda: session.delta_lake(str(mixed_table), name="ORDERS"), "source_config", "duplicate_source_name",
        "duplicate Delta source name `ORDERS`")
    p = session.delta_lake(str(mixed_table))
    dfe(lambda: p.alias("Orders"), "source_config", "duplicate_source_name")
    # Failed registrations spend no id.
    assert "id=1" in repr(p.alias("other"))


def test_delta_lake_rejects_invalid_alias_and_missing_uri(session, mixed_table):
    for name, reason in [("select", "source names must not be SQL keywords"),
                         ("1abc", "source names must start with an ASCII letter or underscore"),
                         ("a-b", "source names may contain only ASCII letters, digits, and underscores"),
                         ("", "source names must not be empty")]:
        dfe(lambda: session.delta_lake(str(mixed_table), name=name), "source_config", "invalid_source_name",
            f"invalid Delta source name `{name}`: {reason}")
    dfe(lambda: session.delta_lake(str(mixed_table), name="a\nb"), "source_config", "invalid_source_name",
        "invalid Delta source name `a\\nb`: source names may contain only ASCII letters, digits, and underscores")
    with pytest.raises(TypeError, match=r"missing 1 required positional argument: 'source_uri'"):
        session.delta_lake()
    with pytest.raises(TypeError, match="takes 1 positional arguments but 2 were given"):
        session.delta_lake(str(mixed_table), "x")
    with pytest.raises(TypeError, match="'int' object is not an instance of 'str'"):
        session.delta_lake(str(mixed_table), name=5)


def test_delta_lake_rejects_invalid_source_args_before_loading(session):
    dfe(lambda: session.delta_lake("", name="x"), "source_config", "invalid_source_uri",
        "`source_uri` must not be empty")
    for version in [-1, True, "1"]:
        dfe(lambda: session.delta_lake("/nowhere", version=version), "source_config", "invalid_version",
            "`version` must be a non-negative integer")
    dfe(lambda: session.delta_lake("/nowhere", storage_options={"a": 1}), "source_config", "invalid_storage_options",
        "`storage_options` values must be strings")
    dfe(lambda: session.delta_lake("/nowhere", storage_options={1: "a"}), "source_config", "invalid_storage_options",
        "`storage_options` keys must be strings")
    with pytest.raises(TypeError, match="'str' object is not an instance of 'bool'"):
        session.delta_lake("/nowhere", name="x", progress="always")
    with pytest.raises(TypeError, match="'int' object is not an instance of 'bool'"):
        session.delta_lake("/nowhere", progress=1)
    dfe(lambda: session.delta_lake("/nowhere/at/all", name="x"), "source_config", "invalid_source_uri",
        "invalid Delta source URI: table location `/nowhere/at/all` does not exist")
    assert repr(session) == "deltafunnel.Session(sources=[], derived_tables=[])"


def test_delta_lake_snapshot_load_error_exposes_cause_context(session, tmp_path):
    err = dfe(lambda: session.delta_lake(str(tmp_path), name="empty"), "delta_source", "delta_snapshot_load")
    assert err.message.startswith("Delta snapshot load error: snapshot could not be loaded: ")
    assert set(err.context) == {"cause"}
    assert err.context["cause"].startswith("snapshot could not be loaded: ")
    assert "\n" not in err.message


def test_delta_lake_repr_and_source_config_errors_do_not_expose_source_secrets(session):
    uri = "s3://user:secret-token@bucket/path?X-Amz-Signature=password"
    p = session.delta_lake(uri, storage_options={"AWS_SECRET_ACCESS_KEY": "secret-token"})
    text = repr(p)
    assert text == 'deltafunnel.PendingDeltaSource(source_uri="s3://bucket/path", snapshot_version=None)'
    for secret in ["secret-token", "password", "user"]:
        assert secret not in text
    with pytest.raises(DeltaFunnelError) as info:
        session.delta_lake(uri, name="remote", storage_options={"AWS_SECRET_ACCESS_KEY": "secret-token"})
    err = info.value
    assert "secret-token" not in err.message and "password" not in err.message
    assert "secret-token" not in str(err.context)


def test_unsupported_reader_feature_is_a_protocol_error(session, tmp_path, mixed_table):
    import shutil
    table = tmp_path / "t"
    shutil.copytree(mixed_table, table)
    log = table / "_delta_log" / "00000000000000000000.json"
    text = log.read_text().replace('{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}',
                                   '{"protocol":{"minReaderVersion":3,"minWriterVersion":7,'
                                   '"readerFeatures":["futureFeature"],"writerFeatures":["futureFeature"]}}')
    log.write_text(text)
    err = dfe(lambda: session.delta_lake(str(table), name="future"), "delta_protocol", "delta_protocol_compatibility")
    assert "futureFeature" in err.message


def test_invalid_protocol_version_fixture_fails_cleanly(session, testdata):
    path = testdata / "delta" / "kernel-rs-golden" / "deltalog-invalid-protocol-version" / "delta"
    with pytest.raises(DeltaFunnelError) as info:
        session.delta_lake(str(path), name="bad")
    assert (info.value.phase, info.value.kind) in {("delta_protocol", "delta_protocol_compatibility"),
                                                   ("delta_source", "delta_snapshot_load")}


def test_table_from_sql_returns_lazy_table_over_registered_source(session, mixed_table):
    session.delta_lake(str(mixed_table), name="orders")
    t = session.table_from_sql("SELECT id, amount FROM orders WHERE id > 10")
    assert repr(t) == 'deltafunnel.Table(id=1, kind="derived_sql", name="table_1")'
    assert [c["name"] for c in t.schema] == ["id", "amount"]
    assert t.schema[1]["arrow_type"] == "Decimal128(12, 2)"


def test_table_alias_registers_derived_table_for_later_sql(session, mixed_table):
    session.delta_lake(str(mixed_table), name="orders")
    recent = session.table_from_sql("SELECT * FROM orders WHERE quantity > 50").alias("recent_orders")
    assert repr(recent) == 'deltafunnel.Table(id=1, kind="derived_sql", name="recent_orders")'
    later = session.table_from_sql("SELECT id FROM recent_orders")
    assert repr(later) == 'deltafunnel.Table(id=2, kind="derived_sql", name="table_2")'
    assert repr(session) == 'deltafunnel.Session(sources=["orders"], derived_tables=["recent_orders"])'


def test_table_alias_preserves_alias_validation_errors(session, mixed_table):
    orders = session.delta_lake(str(mixed_table), name="orders")
    q = session.table_from_sql("SELECT id FROM orders")
    dfe(lambda: q.alias("from"), "source_config", "invalid_source_name")
    dfe(lambda: q.alias("Orders"), "source_config", "duplicate_source_name")
    pending_message = ("SQL table error during derived alias registration: lazy table is not a pending "
                       "SQL-derived table owned by this session")
    dfe(lambda: orders.alias("again"), "sql_table", "sql_table", pending_message)
    a = q.alias("x1")
    dfe(lambda: q.alias("x2"), "sql_table", "sql_table", pending_message)
    dfe(lambda: a.alias("x3"), "sql_table", "sql_table", pending_message)


def test_table_from_sql_rejects_empty_sql(session):
    dfe(lambda: session.table_from_sql("   "), "sql_table", "sql_table",
        "SQL table error during SQL validation: SQL text must not be empty")
    with pytest.raises(TypeError):
        session.table_from_sql(5)


def test_table_from_sql_rejects_invalid_sql_without_exposing_raw_sql(session, mixed_table):
    session.delta_lake(str(mixed_table), name="orders")
    for sql in ["SELECT 'secret-token' AS a; SELECT 2",
                "CREATE TABLE secret_copy AS SELECT * FROM orders",
                "INSERT INTO orders VALUES (1)",
                "SELECT * FROM secret_unknown_table WHERE password = 'x'"]:
        err = dfe(lambda: session.table_from_sql(sql), "sql_table", "sql_table")
        assert sql not in err.message
        assert "secret-token" not in err.message and "'x'" not in err.message
    assert repr(session) == 'deltafunnel.Session(sources=["orders"], derived_tables=[])'


def test_sql_syntax_errors_keep_their_position(session):
    err = dfe(lambda: session.table_from_sql("SELECT 1 +"), "sql_table", "sql_table")
    assert err.context["cause_kind"] == "sql_syntax"
    assert isinstance(err.offset, int) and err.offset >= 0
    assert err.context["offset"] == err.offset


def test_unknown_column_is_sql_table(session, mixed_table):
    session.delta_lake(str(mixed_table), name="orders")
    err = dfe(lambda: session.table_from_sql("SELECT nope FROM orders"), "sql_table", "sql_table")
    assert err.message.startswith("SQL table error during SQL planning: ")
    assert err.context["cause_kind"] == "sql_unknown_column"


def test_catalog_mutations_return_stable_error_when_session_is_already_borrowed(session, big_table):
    big = session.delta_lake(str(big_table), name="big")
    slow = session.table_from_sql("SELECT count(*) AS n FROM big WHERE value % 7 = 3")
    started = threading.Event()
    errors = []

    def run():
        started.set()
        try:
            slow.preview()
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    started.wait()
    seen = None
    for _ in range(2000):
        try:
            session.table_from_sql("SELECT 1 AS x")
        except DeltaFunnelError as exc:
            seen = exc
            break
        if not worker.is_alive():
            break
    worker.join()
    assert not errors
    assert big is not None
    if seen is None:
        pytest.skip("the preview finished before a concurrent mutation could be attempted")
    assert (seen.phase, seen.kind) == ("session_catalog_mutation", "concurrent_session_mutation")


def test_registration_and_previews_reach_python_logging(session, mixed_table, caplog):
    import logging
    deltafunnel.init_logging()
    with caplog.at_level(logging.DEBUG, logger="deltafunnel"):
        t = session.delta_lake(str(mixed_table), name="logged")
        t.preview(1)
        with pytest.raises(DeltaFunnelError):
            session.delta_lake(str(mixed_table), name="LOGGED")
    events = [(r.levelname, getattr(r, "deltafunnel_telemetry_event", None)) for r in caplog.records
              if r.name == "deltafunnel"]
    assert ("INFO", "source_registration.completed") in events
    assert ("INFO", "preview.completed") in events
    assert ("WARNING", "source_registration.failed") in events
    done = next(r for r in caplog.records if getattr(r, "deltafunnel_telemetry_event", "") ==
                "source_registration.completed")
    assert done.deltafunnel_source_name == "logged" and done.deltafunnel_snapshot_version == "0"
    assert done.deltafunnel_target == "delta_funnel" and done.deltafunnel_level == "INFO"
    for record in caplog.records:
        assert str(mixed_table) not in record.getMessage()
