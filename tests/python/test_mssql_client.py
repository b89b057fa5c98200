"""Our TDS client (src/mssql, through libdftest) against the loopback peer,
checked with an independent client (python-tds): every type's edge values
loaded by our bulk encoder read back equal to the source, and the same rows
loaded by python-tds's own bulk copy are stored identically."""

import datetime as dt
import decimal
import os
import uuid

import pytest

from mssql_peer import Client, ClientError, Peer, pytds_connect

pa = pytest.importorskip("pyarrow")
pytds = pytest.importorskip("pytds")

D = decimal.Decimal
MB = 1 << 20


@pytest.fixture(scope="module")
def peer():
    with Peer() as p:
        yield p


@pytest.fixture(scope="module")
def client(dftest):
    return Client(dftest)


# (column, SQL Server type, Arrow type, four values, expected python-tds values or None = same as source)
UTC = dt.timezone.utc
P14, M14 = dt.timezone(dt.timedelta(hours=14)), dt.timezone(dt.timedelta(hours=-14))
TS_US = pa.timestamp("us")
BIG_N = "é" * (MB // 2)           # 1 MB of UTF-8, 1 MB of UTF-16
BIG_B = os.urandom(MB)
BIG_A = "ascii-" * (MB // 6)
NON_BMP = "😀 non-BMP 𝄞 ✓"

COLUMNS = [
    ("c_bit", "bit", pa.bool_(), [True, False, None, True], None),
    ("c_tiny", "tinyint", pa.uint8(), [0, 255, None, 1], None),
    ("c_small", "smallint", pa.int16(), [-32768, 32767, None, 0], None),
    ("c_int", "int", pa.int32(), [-2147483648, 2147483647, None, 0], None),
    ("c_big", "bigint", pa.int64(), [-2**63, 2**63 - 1, None, 0], None),
    ("c_real", "real", pa.float32(), [-3.4028234663852886e38, 1.5, None, 0.0], None),
    ("c_float", "float", pa.float64(), [-1.7976931348623157e308, 2.2250738585072014e-308, None, -0.5], None),
    ("c_dec38_0", "decimal(38,0)", pa.decimal128(38, 0), [D(10**38 - 1), D(-(10**38 - 1)), None, D(0)], None),
    ("c_dec38_10", "decimal(38,10)", pa.decimal128(38, 10),
     [D("9999999999999999999999999999.9999999999"), D("-0.0000000001"), None, D("-1234.5000000000")], None),
    ("c_dec5_2", "numeric(5,2)", pa.decimal128(5, 2), [D("999.99"), D("-999.99"), None, D("0.01")], None),
    ("c_date", "date", pa.date32(), [dt.date(1, 1, 1), dt.date(9999, 12, 31), None, dt.date(2024, 2, 29)], None),
    ("c_time0", "time(0)", pa.time64("us"), [dt.time(0), dt.time(23, 59, 59), None, dt.time(12, 0, 0, 400000)],
     [dt.time(0), dt.time(23, 59, 59), None, dt.time(12, 0, 0)]),
    ("c_time7", "time(7)", pa.time64("ns"), [0, 86399999999900, None, 45296789012300],
     [dt.time(0), dt.time(23, 59, 59, 999999), None, dt.time(12, 34, 56, 789012)]),
    ("c_dt2_7n", "datetime2(7)", pa.timestamp("ns"), [0, 1709210096123456700, None, -1000000000],
     [dt.datetime(1970, 1, 1), dt.datetime(2024, 2, 29, 12, 34, 56, 123456), None, dt.datetime(1969, 12, 31, 23, 59, 59)]),
    ("c_dto_p14", "datetimeoffset(7)", pa.timestamp("us", tz="+14:00"),
     [dt.datetime(1, 1, 1, tzinfo=UTC), dt.datetime(9999, 12, 31, 9, 59, 59, 999999, tzinfo=UTC), None,
      dt.datetime(2024, 2, 29, 10, 0, tzinfo=UTC)], "aware"),
    ("c_dto_m14", "datetimeoffset(3)", pa.timestamp("us", tz="-14:00"),
     [dt.datetime(1, 1, 1, 14, tzinfo=UTC), dt.datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC), None,
      dt.datetime(2024, 2, 29, 10, 0, 0, 123456, tzinfo=UTC)], "aware3"),
    ("c_datetime", "datetime", TS_US,
     [dt.datetime(1753, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 997000), None, dt.datetime(2026, 6, 3, 23, 36, 33, 684582)],
     [dt.datetime(1753, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 997000), None, dt.datetime(2026, 6, 3, 23, 36, 33, 687000)]),
    ("c_sdt", "smalldatetime", TS_US,
     [dt.datetime(1900, 1, 1), dt.datetime(2079, 6, 6, 23, 59), None, dt.datetime(2024, 2, 29, 12, 34, 30)],
     [dt.datetime(1900, 1, 1), dt.datetime(2079, 6, 6, 23, 59), None, dt.datetime(2024, 2, 29, 12, 35)]),
    ("c_guid", "uniqueidentifier", pa.binary(16),
     [uuid.UUID("6F9619FF-8B86-D011-B42D-00C04FC964FF").bytes, b"\x00" * 16, None, b"\xff" * 16],
     [uuid.UUID("6F9619FF-8B86-D011-B42D-00C04FC964FF"), uuid.UUID(int=0), None, uuid.UUID(int=2**128 - 1)]),
    ("c_char", "char(10)", pa.string(), ["abc", "", None, "x" * 10], ["abc       ", "          ", None, "x" * 10]),
    ("c_varchar", "varchar(20)", pa.string(), ["hello", "", None, "z" * 20], None),
    ("c_nchar", "nchar(5)", pa.string(), ["é", "", None, "😀"], ["é    ", "     ", None, "😀   "]),
    ("c_nvarchar", "nvarchar(50)", pa.string(), ["héllo wörld", "", None, NON_BMP], None),
    ("c_nvmax", "nvarchar(max)", pa.string(), [BIG_N, "", None, NON_BMP * 100], None),
    ("c_vcmax", "varchar(max)", pa.string(), [BIG_A, "", None, "a"], None),
    ("c_binary", "binary(4)", pa.binary(), [b"\x01", b"", None, b"\xff" * 4], [b"\x01\x00\x00\x00", b"\x00" * 4, None, b"\xff" * 4]),
    ("c_varbinary", "varbinary(16)", pa.binary(), [b"\x00\x01", b"", None, b"\xff" * 16], None),
    ("c_vbmax", "varbinary(max)", pa.binary(), [BIG_B, b"", None, b"\x00"], None),
]


def _dt2_columns():
    """datetime2(0..7) from microsecond timestamps: rounding half up at each scale."""
    src = [dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59), None, dt.datetime(2024, 2, 29, 12, 34, 56, 123456)]
    cols = []
    for scale in range(8):
        frac = round(123456 / 10 ** (6 - scale)) * 10 ** (6 - scale) if scale < 6 else 123456
        exp = [src[0], src[1], None, dt.datetime(2024, 2, 29, 12, 34, 56) + dt.timedelta(microseconds=frac)]
        cols.append((f"c_dt2_{scale}", f"datetime2({scale})", TS_US, src, exp))
    return cols


ALL = COLUMNS + _dt2_columns()
IDS = [1, 2, 3, 4]


def _arrow_table():
    arrays = {"c_id": pa.array(IDS, pa.int32())}
    for name, _, atype, values, _ in ALL:
        arrays[name] = pa.array(values, atype)
    return pa.table(arrays)


def _create(cur, table):
    cols = ", ".join(f"[{n}] {t} NULL" for n, t, *_ in ALL)
    cur.execute(f"CREATE TABLE [dbo].[{table}] ([c_id] int NOT NULL, {cols})")


def _spec():
    return "c_id int NOT NULL;" + ";".join(f"{n} {t}" for n, t, *_ in ALL)


def _expected(col, values, exp):
    if exp is None:
        return values
    if exp == "aware":
        return values
    if exp == "aware3":
        return [v if v is None else v.replace(microsecond=v.microsecond // 1000 * 1000) for v in values]
    return exp


def _assert_rows(rows, label):
    assert [r[0] for r in rows] == IDS, label
    for i, (name, sqltype, _, values, exp) in enumerate(ALL, start=1):
        got = [r[i] for r in rows]
        want = _expected(name, values, exp)
        if sqltype == "real":
            want = [None if v is None else float(pa.scalar(v, pa.float32()).as_py()) for v in want]
        if isinstance(exp, str) and exp.startswith("aware"):
            assert all((g is None) == (w is None) for g, w in zip(got, want)), name
            assert [g for g in got if g is not None] == [w for w in want if w is not None], f"{label}: {name}"
            offset = dt.timedelta(hours=14 if name == "c_dto_p14" else -14)
            assert all(g.utcoffset() == offset for g in got if g is not None), f"{label}: {name} offsets"
            continue
        assert got == want, f"{label}: column {name} ({sqltype})"


def test_every_type_round_trips_through_our_bulk_encoder(peer, client):
    conn = pytds_connect(peer)
    cur = conn.cursor()
    _create(cur, "edges")
    n = client.bulk_load(peer.conn_str(), "[dbo].[edges]", _spec(), _arrow_table(), "tablock,keep_nulls,nanos=reject")
    assert n == 4
    cur.execute("SELECT * FROM [dbo].[edges] ORDER BY [c_id]")
    _assert_rows(cur.fetchall(), "our client")
    # 100 ns precision and rounding at every datetime2 scale, as stored text
    cur.execute("SELECT " + ", ".join(f"CAST([c_dt2_{s}] AS nvarchar(40))" for s in range(8)) +
                ", CAST([c_dt2_7n] AS nvarchar(40)), CAST([c_time7] AS nvarchar(20)) FROM [dbo].[edges] WHERE [c_id] = 4")
    row = cur.fetchone()
    assert list(row[:8]) == ["2024-02-29 12:34:56", "2024-02-29 12:34:56.1", "2024-02-29 12:34:56.12",
                             "2024-02-29 12:34:56.123", "2024-02-29 12:34:56.1235", "2024-02-29 12:34:56.12346",
                             "2024-02-29 12:34:56.123456", "2024-02-29 12:34:56.1234560"]
    assert row[8] == "1969-12-31 23:59:59.0000000"
    assert row[9] == "12:34:56.7890123"
    cur.execute("SELECT CAST([c_dt2_7n] AS nvarchar(40)) FROM [dbo].[edges] WHERE [c_id] = 2")
    assert cur.fetchone()[0] == "2024-02-29 12:34:56.1234567"
    cur.execute("SELECT CAST([c_dto_p14] AS nvarchar(40)), CAST([c_dto_m14] AS nvarchar(40)) FROM [dbo].[edges] WHERE [c_id] = 1")
    assert cur.fetchone() == ("0001-01-01 14:00:00.0000000 +14:00", "0001-01-01 00:00:00.000 -14:00")
    conn.close()


def _pytds_columns():
    from pytds import tds_base, tds_types as T
    simple = {"bit": T.BitType, "tinyint": T.TinyIntType, "smallint": T.SmallIntType, "int": T.IntType,
              "bigint": T.BigIntType, "real": T.RealType, "float": T.FloatType, "date": T.DateType,
              "datetime": T.DateTimeType, "smalldatetime": T.SmallDateTimeType, "uniqueidentifier": T.UniqueIdentifierType,
              "nvarchar(max)": T.NVarCharMaxType, "varchar(max)": T.VarCharMaxType, "varbinary(max)": T.VarBinaryMaxType}
    cols = [tds_base.Column(name="c_id", type=T.IntType(), flags=0)]
    for name, sqltype, *_ in ALL:
        base, _, arg = sqltype.partition("(")
        args = [int(a) for a in arg.rstrip(")").split(",")] if arg and sqltype not in simple else []
        if sqltype in simple:
            t = simple[sqltype]()
        elif base in ("decimal", "numeric"):
            t = T.DecimalType(precision=args[0], scale=args[1])
        elif base == "time":
            t = T.TimeType(precision=args[0])
        elif base == "datetime2":
            t = T.DateTime2Type(precision=args[0])
        elif base == "datetimeoffset":
            t = T.DateTimeOffsetType(precision=args[0])
        elif base in ("char", "varchar"):
            t = (T.CharType if base == "char" else T.VarCharType)(size=args[0])
        elif base in ("nchar", "nvarchar"):
            t = (T.NCharType if base == "nchar" else T.NVarCharType)(size=args[0])
        else:
            # python-tds 1.17 cannot serialize BinaryType in bulk copies (its
            # serializer misses the size): send binary(n) as varbinary(n), the
            # server converts (and pads) as it does for any bulk client.
            t = T.VarBinaryType(size=args[0])
        cols.append(tds_base.Column(name=name, type=t, flags=tds_base.Column.fNullable))
    return cols


def test_python_tds_bulk_copy_stores_the_same_rows(peer, client):
    conn = pytds_connect(peer)
    cur = conn.cursor()
    cur.execute("SELECT OBJECT_ID(N'[dbo].[edges]')")
    if cur.fetchone()[0] is None:
        _create(cur, "edges")
        client.bulk_load(peer.conn_str(), "[dbo].[edges]", _spec(), _arrow_table(), "")
    cur.execute("SELECT * FROM [dbo].[edges] ORDER BY [c_id]")
    ours = cur.fetchall()
    _create(cur, "edges_pytds")
    cur.copy_to(table_or_view="edges_pytds", columns=_pytds_columns(), data=[tuple(r) for r in ours], keep_nulls=True)
    cur.execute("SELECT * FROM [dbo].[edges_pytds] ORDER BY [c_id]")
    theirs = cur.fetchall()
    for i, (name, *_rest) in enumerate([("c_id",)] + ALL):
        assert [r[i] for r in theirs] == [r[i] for r in ours], f"column {name} differs between loaders"
    conn.close()


def test_query_results_map_to_arrow_types(peer, client):
    cs = peer.conn_str()
    client.exec(cs, "CREATE TABLE q (id bigint NOT NULL, name nvarchar(20), amount decimal(12,3), ts datetime2(3), ok bit)")
    client.exec(cs, "INSERT INTO q VALUES (1, N'one', 1.5, '2024-01-02 03:04:05.678', 1), (2, NULL, NULL, NULL, NULL)")
    t = client.query(cs, "SELECT id, name, amount, ts, ok FROM q ORDER BY id")
    assert t.schema.types == [pa.int64(), pa.string(), pa.decimal128(12, 3), pa.timestamp("us"), pa.bool_()]
    assert t.to_pylist() == [
        {"id": 1, "name": "one", "amount": D("1.500"), "ts": dt.datetime(2024, 1, 2, 3, 4, 5, 678000), "ok": True},
        {"id": 2, "name": None, "amount": None, "ts": None, "ok": None},
    ]
    t = client.query(cs, "SELECT COUNT_BIG(*) AS n FROM q")
    assert t.schema.types == [pa.int64()] and t.column(0).to_pylist() == [2]


def test_batches_split_across_many_packets_and_chunks(peer, client):
    cs = peer.conn_str(**{"Packet Size": 512})
    client.exec(cs, "CREATE TABLE many (id int NOT NULL, s nvarchar(100))")
    n = 20000
    tbl = pa.table({"id": pa.array(range(n), pa.int32()), "s": pa.array([f"row {i} ✓" * 3 for i in range(n)])})
    assert client.bulk_load(cs, "[dbo].[many]", "id int NOT NULL;s nvarchar(100)", tbl, "chunk=777") == n
    conn = pytds_connect(peer)
    cur = conn.cursor()
    cur.execute("SELECT COUNT_BIG(*), MIN(id), MAX(id) FROM many")
    assert cur.fetchone() == (n, 0, n - 1)
    cur.execute("SELECT s FROM many WHERE id = 12345")
    assert cur.fetchone()[0] == "row 12345 ✓" * 3
    conn.close()


def test_value_that_does_not_fit_fails_before_sending(peer, client):
    cs = peer.conn_str()
    client.exec(cs, "CREATE TABLE narrow (s nvarchar(3) NOT NULL)")
    with pytest.raises(ClientError) as e:
        client.bulk_load(cs, "[dbo].[narrow]", "s nvarchar(3) NOT NULL", pa.table({"s": ["abc", "abcd"]}))
    assert e.value.kind == "value_conversion"
    assert "abcd" not in e.value.message and "row 1" in e.value.message
    with pytest.raises(ClientError) as e:
        client.bulk_load(cs, "[dbo].[narrow]", "s nvarchar(3) NOT NULL", pa.table({"s": ["a", None]}))
    assert e.value.kind == "value_conversion"
    conn = pytds_connect(peer)
    cur = conn.cursor()
    cur.execute("SELECT COUNT(*) FROM narrow")
    assert cur.fetchone()[0] == 0
    conn.close()


def test_transactions_commit_and_roll_back(peer, client):
    cs = peer.conn_str()
    client.exec(cs, "CREATE TABLE tx (id int NOT NULL)")
    tbl = pa.table({"id": pa.array([1, 2, 3], pa.int32())})
    assert client.bulk_load(cs, "[dbo].[tx]", "id int NOT NULL", tbl, "txn,rollback") == 3
    assert client.query(cs, "SELECT COUNT(*) AS n FROM tx").column(0).to_pylist() == [0]
    assert client.bulk_load(cs, "[dbo].[tx]", "id int NOT NULL", tbl, "txn") == 3
    assert client.query(cs, "SELECT COUNT(*) AS n FROM tx").column(0).to_pylist() == [3]
    states = client.session(cs, ["BEGIN TRANSACTION", "INSERT INTO tx VALUES (9)", "ROLLBACK TRANSACTION",
                                 "SELECT COUNT(*) FROM tx"])
    assert [s[1] for s in states] == [1, 1, 0, 0]
    assert states[1][0] == 1
    with pytest.raises(ClientError) as e:
        client.exec(cs, "COMMIT TRANSACTION")
    assert e.value.kind == "mssql_server_error" and e.value.code == 3902


def test_aborted_bulk_load_stores_nothing(peer, client):
    cs = peer.conn_str()
    client.exec(cs, "CREATE TABLE ab (id int NOT NULL)")
    reader = pa.RecordBatchReader.from_batches(pa.schema([("id", pa.int32())]),
                                               [pa.record_batch([pa.array([1, 2], pa.int32())], names=["id"])] * 3)
    assert client.bulk_load(cs, "[dbo].[ab]", "id int NOT NULL", reader, "abort_after=2") == 0
    assert client.query(cs, "SELECT COUNT(*) AS n FROM ab").column(0).to_pylist() == [0]


def test_unknown_table_and_columns_are_server_errors(peer, client):
    cs = peer.conn_str()
    with pytest.raises(ClientError) as e:
        client.bulk_load(cs, "[dbo].[missing]", "id int", pa.table({"id": pa.array([1], pa.int32())}))
    assert (e.value.kind, e.value.code) == ("mssql_server_error", 208)
    client.exec(cs, "CREATE TABLE cols (id int)")
    with pytest.raises(ClientError) as e:
        client.bulk_load(cs, "[dbo].[cols]", "nope int", pa.table({"nope": pa.array([1], pa.int32())}))
    assert (e.value.kind, e.value.code) == ("mssql_server_error", 207)
    with pytest.raises(ClientError) as e:
        client.exec(cs, "SELEKT 1")
    assert (e.value.kind, e.value.code) == ("mssql_server_error", 102)
    # the connection string's password never appears in errors
    with pytest.raises(ClientError) as e:
        client.exec(peer.conn_str(password="not-the-password-xyz"), "SELECT 1")
    assert e.value.kind == "mssql_login_failed" and e.value.code == 18456
    assert "not-the-password-xyz" not in e.value.message
