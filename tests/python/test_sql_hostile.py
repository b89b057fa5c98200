"""SQL under hostile input: long IN lists, many keys, NUL bytes in
arguments and SQL text, date/time overflow.

IN lists and many-key queries are compared with DuckDB (same VALUES
tables, same SQL); date/time boundary cases with the `datafusion` package
where it is installed (the outcome, value or error or NULL, is what
DataFusion gives)."""

import time

import pytest

import deltafunnel
from deltafunnel import DeltaFunnelError

duckdb = pytest.importorskip("duckdb")

XS = "(VALUES (1), (2), (3), (NULL), (5), (-7), (40), (2)) t(x)"
FS = "(VALUES (1.0), (2.5), (NULL), (3.0), (-7.25), (1e300)) t(x)"


def rows(session, sql):
    table = session.table_from_sql(sql).to_arrow()
    cols = [table.column(i).to_pylist() for i in range(table.num_columns)]
    return [tuple(r) for r in zip(*cols)]


def oracle(sql):
    return [tuple(r) for r in duckdb.sql(sql).fetchall()]


def in_list(values):
    return ", ".join(values)


IN_CASES = [
    (XS, in_list(["1", "3"])),
    (XS, in_list(["1", "NULL"])),
    (XS, in_list(str(i) for i in range(10, 40))),                      # hashed, no match for most rows
    (XS, in_list([str(i) for i in range(3, 30)] + ["NULL"])),           # hashed, with NULL
    (XS, in_list(["2.0", "2.5", "40", "1e1"])),                         # floats against integers
    (XS, in_list([f"{i}.5" for i in range(20)] + ["5.0", "-7"])),       # hashed floats against integers
    (XS, in_list([str(i) for i in range(20)] + ["CAST(40 AS SMALLINT)"])),
    (FS, in_list(["1", "3", "2.5"])),                                   # integers against floats
    (FS, in_list([str(i) for i in range(-10, 20)] + ["2.5", "1e300"])),
    (FS, in_list([str(i) for i in range(-10, 20)] + ["NULL"])),
]


@pytest.mark.parametrize("table,items", IN_CASES)
@pytest.mark.parametrize("neg", ["", "NOT "])
def test_in_lists_match_duckdb_with_nulls_and_mixed_types(session, table, items, neg):
    sql = f"SELECT x, x {neg}IN ({items}) AS r FROM {table} ORDER BY x NULLS LAST, r NULLS LAST"
    assert rows(session, sql) == oracle(sql)
    sql = f"SELECT count(*) FROM {table} WHERE x {neg}IN ({items})"
    assert rows(session, sql) == oracle(sql)


def test_in_list_of_400k_constants_is_linear(session):
    items = ", ".join(str(i) for i in range(400_000))
    start = time.monotonic()
    got = rows(session, f"SELECT count(*) FROM {XS} WHERE x IN ({items}, NULL)")
    elapsed = time.monotonic() - start
    assert got == [(6,)]
    assert elapsed < 10, f"400k-element IN list took {elapsed:.1f} s"
    got = rows(session, f"SELECT count(*) FROM {XS} WHERE x NOT IN ({items})")
    assert got == [(1,)]  # -7; NULL is not counted


@pytest.mark.parametrize("sql", [
    "SELECT " + "(" * 20000 + "1" + ")" * 20000,
    "SELECT 1" + " + 1" * 100_000,
    "SELECT " + "abs(" * 5000 + "1" + ")" * 5000,
    "SELECT " + "CASE WHEN true THEN " * 5000 + "1" + " END" * 5000,
    "SELECT * FROM " + "(SELECT * FROM " * 5000 + "(VALUES (1)) t" + ") s" * 5000,
    "SELECT count(*) FROM (SELECT 1" + " UNION ALL SELECT 1" * 20000 + ") u",
    "SELECT count(*) FROM (VALUES (1)) a" + " JOIN (VALUES (1)) b ON true" * 5000,
    "SELECT 1 FROM (VALUES (1)) t(x) WHERE x IN (SELECT 1)" + " AND x IN (SELECT 1)" * 60000,
    "WITH c0 AS (SELECT 1 AS x)" + "".join(f", c{i} AS (SELECT x + 1 AS x FROM c{i - 1})" for i in range(1, 5000))
    + " SELECT x FROM c4999",
])
def test_deep_sql_fails_as_too_complex(session, sql):
    with pytest.raises(DeltaFunnelError) as info:
        session.table_from_sql(sql)
    err = info.value
    assert (err.phase, err.kind) == ("sql_table", "sql_table"), (err.phase, err.kind, err.message)
    assert err.context["cause_kind"] == "sql_too_complex"


def test_long_flat_chains_work(session):
    assert rows(session, "SELECT count(*) FROM (VALUES (1), (2)) t(x) WHERE x = 0" + " OR x = 1" * 20000) == [(1,)]
    assert rows(session, "SELECT 1" + " + 1" * 900) == [(901,)]


def test_hundreds_of_sort_group_and_partition_keys_match_duckdb(session):
    table = "(SELECT i AS v FROM (VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9),(10),(11)) t(i)) n"
    keys = ", ".join(f"(v + {j}) % {2 + j % 5}" for j in range(200))
    sql = f"SELECT v FROM {table} ORDER BY {keys}, v"
    assert rows(session, sql) == oracle(sql)
    sql = f"SELECT count(*) AS c, min(v) AS m FROM {table} GROUP BY {keys} ORDER BY m"
    assert rows(session, sql) == oracle(sql)
    sql = f"SELECT v, row_number() OVER (PARTITION BY {keys} ORDER BY v) AS r FROM {table} ORDER BY v"
    assert rows(session, sql) == oracle(sql)


# ---------------------------------------------------------------------------
# NUL bytes: refused with invalid_argument, never cut short


def nul_refused(fn):
    with pytest.raises(DeltaFunnelError) as info:
        fn()
    assert info.value.kind == "invalid_argument", (info.value.phase, info.value.kind, info.value.message)
    assert "\x00" not in info.value.message
    return info.value


@pytest.mark.parametrize("sql", [
    "SELECT 1 AS id WHERE 1 < 0\x00 OR 1 >= 0",
    "SELECT 1 AS a\x00, 2 AS b",
    "SELECT 'a\x00b' AS s",
    "\x00SELECT 1",
])
def test_nul_in_sql_text_is_refused(session, sql):
    nul_refused(lambda: session.table_from_sql(sql))


def test_nul_in_names_modes_and_options_is_refused(session, tmp_path):
    t = session.table_from_sql("SELECT 1 AS a")
    nul_refused(lambda: t.alias("x\x00y"))
    nul_refused(lambda: t.to_mssql(schema="dbo", table="t", load_mode="replace\x00xx"))
    nul_refused(lambda: t.to_mssql(schema="dbo\x00", table="t", load_mode="replace"))
    nul_refused(lambda: t.to_mssql(schema="dbo", table="t", load_mode="replace", name="n\x00"))
    nul_refused(lambda: session.delta_lake(str(tmp_path) + "\x00/x"))
    nul_refused(lambda: session.delta_lake(str(tmp_path), storage_options={"k": "v\x00w"}))
    nul_refused(lambda: session.delta_lake(str(tmp_path), storage_options={"k\x00": "v"}))
    nul_refused(lambda: deltafunnel.Session(default_mssql_connection_string="server=x\x00;"))
    # The same strings without the NUL are accepted (or fail for their own reasons, not as invalid_argument).
    assert t.to_mssql(schema="dbo", table="t", load_mode="replace") is not None


@pytest.mark.parametrize("name,text", [
    ("nul.toml", 'x = "a\\u0000b"\n'),
    ("nul2.toml", '[[tables]]\nalias = "t"\nsql = "SELECT 1 WHERE 1<0\\U00000000 OR 1>=0"\n'),
    ("nul.json", '{"tables": [{"alias": "t", "sql": "SELECT 1 AS a\\u0000, 2 AS b"}]}'),
    ("nul2.json", '{"tables": [{"alias\\u0000": "t"}]}'),
])
def test_nul_in_job_files_is_refused(cli, tmp_path, name, text):
    import json
    import subprocess
    job = tmp_path / name
    job.write_text(text)
    proc = subprocess.run([cli, "load", str(job), "--dry-run"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, (proc.returncode, proc.stderr)
    assert "NUL" in proc.stderr
    assert json.loads(proc.stdout)["error"]["phase"] == "config"


def test_raw_nul_byte_in_a_json_job_is_not_the_end_of_it(cli, tmp_path):
    import subprocess
    job = tmp_path / "raw.json"
    job.write_bytes(b'{"tables": []}\x00{"tables": [{"alias": 1}]}')
    proc = subprocess.run([cli, "load", str(job), "--dry-run"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, (proc.returncode, proc.stderr)


# ---------------------------------------------------------------------------
# Date/time overflow: the outcome DataFusion gives (value, NULL or error)

TS_S_MAX = "arrow_cast(9223372036854775000, 'Timestamp(Second, None)')"
TS_S_MIN = "arrow_cast(-9223372036854775000, 'Timestamp(Second, None)')"
DATE_MAX = "arrow_cast(2147483647, 'Date32')"
DATE_MIN = "arrow_cast(-2147483648, 'Date32')"

DATETIME_CASES = [
    "make_date(2147483647, 12, 31)",
    "make_date(-2147483648, 1, 1)",
    "make_date(5881580, 7, 11)",
    "make_date(262142, 12, 31)",
    "make_date(262143, 1, 1)",
    "make_date(-262143, 1, 1)",
    "make_date(-262144, 12, 31)",
    "make_date(9999, 12, 31)",
    "make_date(2024, 2, 30)",
    "date_bin(interval '1 month', timestamp '2024-05-05 00:00:00')",
    "date_bin(interval '1 month', timestamp '2024-05-05 00:00:00', timestamp '1677-09-22 00:00:00')",
    "date_bin(interval '1 month', timestamp '1677-09-22 01:00:00', timestamp '1970-01-25 00:00:00')",
    "date_bin(interval '12 months', timestamp '1677-09-22 01:00:00', timestamp '1970-01-25 00:00:00')",
    "date_bin(interval '1 month', timestamp '2262-04-11 00:00:00', timestamp '2262-04-11 23:00:00')",
    "date_bin(interval '2147483647 months', timestamp '2024-05-05 00:00:00')",
    f"date_bin(interval '1 month', {TS_S_MAX})",
    f"date_bin(interval '1 month', {TS_S_MIN})",
    f"date_bin(interval '1 second', {TS_S_MAX})",
    f"date_bin(interval '1 second', {TS_S_MIN})",
    "date_bin(interval '1 month', arrow_cast(9223372036854775000, 'Timestamp(Millisecond, None)'))",
    "date_bin(interval '1 month', arrow_cast(9223372036854775000, 'Timestamp(Microsecond, None)'))",
    "date_bin(interval '106751 days', timestamp '2024-05-05 00:00:00')",
    "date_bin(interval '106752 days', timestamp '2024-05-05 00:00:00')",
    "date_bin(interval '1 month 1 day', timestamp '2024-05-05 00:00:00')",
    f"date_trunc('month', {TS_S_MAX})",
    f"date_trunc('year', {TS_S_MIN})",
    f"date_trunc('week', {TS_S_MIN})",
    "date_trunc('month', timestamp '2262-04-11 23:47:16')",
    f"date_part('year', {TS_S_MAX})",
    f"date_part('year', {DATE_MAX})",
    f"date_part('month', {DATE_MIN})",
    f"date_part('epoch', {DATE_MAX})",
    f"date_part('epoch', {TS_S_MAX})",
    f"extract(week from {DATE_MAX})",
    "extract(epoch from timestamp '2262-04-11 23:47:16')",
    "date '2024-01-31' + interval '1 month'",
    "date '2024-01-31' + interval '2147483647 months'",
    "date '2024-01-31' + interval '2147483647 days'",
    f"{DATE_MAX} + interval '1 day'",
    f"{DATE_MAX} + interval '1 month'",
    f"{DATE_MIN} - interval '1 month'",
    "timestamp '2024-01-31 00:00:00' + interval '2147483647 months'",
    "timestamp '2024-01-31 00:00:00' + interval '2147483647 days'",
    "timestamp '2262-04-11 00:00:00' + interval '1 day'",
    f"{TS_S_MAX} + interval '1 month'",
    f"{TS_S_MIN} - interval '1 day'",
    "interval '2147483647 months' + interval '1 month'",
    "interval '2147483647 days' + interval '1 day'",
    "timestamp '2262-04-11 00:00:00' - timestamp '1677-09-22 00:00:00'",
    "to_timestamp(9223372036)",
    "to_timestamp(9223372037)",
    "to_timestamp(-9223372037)",
    "to_timestamp(9223372036854775807)",
    "to_timestamp_seconds(9223372036854775000)",
    "to_timestamp_millis(9223372036854775000)",
    "to_timestamp_micros(9223372036854775807)",
    "to_date(2147483647)",
    "to_date(-2147483648)",
    "to_date(9223372036854775807)",
    "from_unixtime(9223372036854775000)",
    "from_unixtime(-9223372036854775000)",
    f"arrow_cast({DATE_MAX}, 'Timestamp(Second, None)')",
    f"arrow_cast({DATE_MAX}, 'Timestamp(Nanosecond, None)')",
    f"arrow_cast({TS_S_MAX}, 'Date32')",
    f"arrow_cast({TS_S_MAX}, 'Timestamp(Millisecond, None)')",
]


def _outcome(run):
    """('ok', values as integers for dates/timestamps) or ('error', None)."""
    pa = pytest.importorskip("pyarrow")
    try:
        table = run()
    except Exception:  # noqa: BLE001 - any failure is DataFusion's or our error outcome
        return ("error", None)
    col = table.column(0)
    if pa.types.is_date32(col.type):
        col = col.cast(pa.int32())
    elif pa.types.is_timestamp(col.type) or pa.types.is_duration(col.type):
        col = col.cast(pa.int64())
    return ("ok", col.to_pylist())


@pytest.mark.parametrize("expr", DATETIME_CASES)
def test_datetime_overflow_matches_datafusion(session, expr):
    datafusion = pytest.importorskip("datafusion")
    sql = f"SELECT {expr} AS v"
    ctx = datafusion.SessionContext()
    want = _outcome(lambda: ctx.sql(sql).to_arrow_table())
    got = _outcome(lambda: session.table_from_sql(sql).to_arrow())
    assert got == want, (sql, got, want)
