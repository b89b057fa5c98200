"""The loopback peer checked by clients others wrote: FreeTDS tsql/freebcp
(Debian freetds-bin), python-tds (including its bulk copy) and
mssql-python (Microsoft's driver, including its bulk copy), plain and with
TLS; plus the catalog and lifecycle statements the loader relies on."""

import datetime as dt
import decimal
import os
import shutil
import subprocess

import pytest

from mssql_peer import PASSWORD, USER, Peer, make_certificate, pytds_connect

pytds = pytest.importorskip("pytds")


@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    return make_certificate(tmp_path_factory.mktemp("cert"))


@pytest.fixture(scope="module")
def peer(cert):
    with Peer("--cert", cert[0], "--key", cert[1]) as p:
        yield p


def _freetds_conf(tmp_path, peer, encryption):
    conf = tmp_path / f"freetds-{encryption}.conf"
    conf.write_text(f"[global]\n    tds version = 7.4\n[peer]\n    host = {peer.host}\n    port = {peer.port}\n"
                    f"    encryption = {encryption}\n")
    env = {**os.environ, "FREETDSCONF": str(conf), "TDSVER": "7.4"}
    env.pop("LD_PRELOAD", None)  # the sanitizer runtime preloaded for libdftest stalls FreeTDS's GnuTLS
    return env


def _tsql(env, script, password=PASSWORD):
    if not shutil.which("tsql"):
        pytest.skip("FreeTDS tsql is not installed (Debian package freetds-bin)")
    r = subprocess.run(["tsql", "-S", "peer", "-U", USER, "-P", password, "-o", "q"], input=script, env=env,
                       capture_output=True, text=True, timeout=60)
    return r.stdout + r.stderr


@pytest.mark.parametrize("encryption", ["off", "request", "require"])
def test_freetds_tsql(tmp_path, peer, encryption):
    env = _freetds_conf(tmp_path, peer, encryption)
    table = f"tsql_{encryption}"
    tls_before = peer.trace_text().count("tls wrapped: TLSv1.2")
    out = _tsql(env, f"CREATE TABLE {table} (id int NOT NULL, name nvarchar(20), amount decimal(10,2))\ngo\n"
                     f"INSERT INTO {table} VALUES (1, N'héllo', 12.5), (2, NULL, -0.01)\ngo\n"
                     f"SELECT id, name, amount FROM {table} ORDER BY id\ngo\n")
    assert "1\théllo\t12.50" in out and "2\tNULL\t-0.01" in out, out
    out = _tsql(env, "SELECT 1\ngo\n", password="wrong")
    assert "18456" in out and "Login failed for user 'sa'" in out, out
    # request = login-only TLS, require = full TLS, off = none (two sessions above)
    assert peer.trace_text().count("tls wrapped: TLSv1.2") - tls_before == (0 if encryption == "off" else 2)


@pytest.mark.parametrize("encryption", ["off", "require"])
def test_freebcp_loads_rows_python_tds_reads_them(tmp_path, peer, encryption):
    if not shutil.which("freebcp"):
        pytest.skip("FreeTDS freebcp is not installed (Debian package freetds-bin)")
    env = _freetds_conf(tmp_path, peer, encryption)
    table = f"bcp_{encryption}"
    conn = pytds_connect(peer)
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {table} (id int NOT NULL, s nvarchar(20), v varchar(10), d decimal(10,2), "
                "t datetime2(3), dd date, b bit, f float, g uniqueidentifier, big bigint)")
    data = tmp_path / "rows.txt"
    data.write_text("1|héllo ✓|abc|12345678.91|2024-02-29 12:34:56.789|2024-02-29|1|1.5|6F9619FF-8B86-D011-B42D-00C04FC964FF|"
                    "9223372036854775807\n2||||||||| -9223372036854775808\n", encoding="utf-8")
    r = subprocess.run(["freebcp", f"dbo.{table}", "in", str(data), "-S", "peer", "-U", USER, "-P", PASSWORD, "-c", "-t", "|",
                        "-h", "TABLOCK"], env=env, capture_output=True, text=True, timeout=60)
    assert "2 rows copied" in r.stdout, r.stdout + r.stderr
    cur.execute(f"SELECT * FROM {table} ORDER BY id")
    rows = cur.fetchall()
    assert list(rows[0]) == [1, "héllo ✓", "abc", decimal.Decimal("12345678.91"), dt.datetime(2024, 2, 29, 12, 34, 56, 789000),
                             dt.date(2024, 2, 29), True, 1.5, __import__("uuid").UUID("6F9619FF-8B86-D011-B42D-00C04FC964FF"),
                             9223372036854775807]
    assert list(rows[1]) == [2, None, None, None, None, None, None, None, None, -9223372036854775808]
    assert "insert bulk dbo." + table in peer.trace_text()
    conn.close()


@pytest.mark.parametrize("tls", [False, True])
def test_python_tds_query_bulk_copy_and_login_failure(peer, cert, tls):
    kw = {"cafile": str(cert[0]), "validate_host": False} if tls else {}
    conn = pytds_connect(peer, **kw)
    cur = conn.cursor()
    table = f"pytds_{int(tls)}"
    cur.execute(f"CREATE TABLE {table} (id int NOT NULL, s nvarchar(50), ts datetime2(7), m varbinary(max))")
    from pytds import tds_base, tds_types as T
    cols = [tds_base.Column(name="id", type=T.IntType(), flags=0),
            tds_base.Column(name="s", type=T.NVarCharType(size=50), flags=tds_base.Column.fNullable),
            tds_base.Column(name="ts", type=T.DateTime2Type(precision=7), flags=tds_base.Column.fNullable),
            tds_base.Column(name="m", type=T.VarBinaryMaxType(), flags=tds_base.Column.fNullable)]
    blob = os.urandom(300000)
    rows = [(1, "😀 non-BMP", dt.datetime(1, 1, 1), blob), (2, None, dt.datetime(9999, 12, 31, 23, 59, 59, 999999), None)]
    cur.copy_to(table_or_view=table, columns=cols, data=rows, tablock=True)
    cur.execute(f"SELECT id, s, ts, m FROM {table} ORDER BY id")
    assert [tuple(r) for r in cur.fetchall()] == rows
    cur.execute(f"SELECT COUNT_BIG(*) FROM {table}")
    assert cur.fetchone()[0] == 2
    conn.close()
    with pytest.raises(pytds.tds_base.Error) as e:
        pytds_connect(peer, password="wrong", **kw)
    assert "Login failed for user 'sa'." in str(e.value)


def _mssql_python():
    return pytest.importorskip("mssql_python")


@pytest.mark.parametrize("encrypt", ["Encrypt=no", "Encrypt=yes;TrustServerCertificate=yes"])
def test_mssql_python_query_and_bulkcopy(peer, encrypt):
    mp = _mssql_python()
    cs = f"Server={peer.host},{peer.port};UID={USER};PWD={PASSWORD};Database=master;{encrypt}"
    conn = mp.connect(cs)
    cur = conn.cursor()
    table = "mp_" + ("tls" if "yes" in encrypt else "plain")
    cur.execute(f"CREATE TABLE {table} (id int NOT NULL, s nvarchar(20), d decimal(10,2))")
    conn.commit()
    cur.execute(f"INSERT INTO {table} VALUES (1, N'x', 1.25)")
    conn.commit()
    result = cur.bulkcopy(table, [(2, "y", decimal.Decimal("2.50")), (3, None, None)])
    assert result["rows_copied"] == 2
    cur.execute(f"SELECT id, s, d FROM {table} ORDER BY id")
    assert [tuple(r) for r in cur.fetchall()] == [(1, "x", decimal.Decimal("1.25")), (2, "y", decimal.Decimal("2.50")),
                                                  (3, None, None)]
    conn.commit()
    conn.close()
    with pytest.raises(Exception) as e:
        mp.connect(cs.replace(PASSWORD, "wrong"))
    assert "18456" in str(e.value) or "Login failed" in str(e.value)


def test_catalog_and_lifecycle_statements(peer):
    conn = pytds_connect(peer)
    cur = conn.cursor()
    cur.execute("CREATE TABLE [dbo].[life] ([id] bigint NOT NULL, [name] nvarchar(max) NULL, [amount] decimal(12,2) NULL, "
                "[ts] datetime2(3) NULL)")
    cur.execute("SELECT CASE WHEN EXISTS (SELECT 1 FROM sys.tables AS t INNER JOIN sys.schemas AS s ON s.schema_id = "
                "t.schema_id WHERE t.name = N'life' AND s.name = N'dbo') THEN CAST(1 AS bit) ELSE CAST(0 AS bit) END AS [exists]")
    assert cur.fetchone()[0] is True
    assert cur.description[0][1] == 104 or cur.description[0][1] == 50  # bit
    cur.execute("SELECT COLUMN_NAME, DATA_TYPE, CHARACTER_MAXIMUM_LENGTH, NUMERIC_PRECISION, NUMERIC_SCALE, "
                "DATETIME_PRECISION, IS_NULLABLE FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_SCHEMA = N'dbo' AND "
                "TABLE_NAME = N'life' ORDER BY ORDINAL_POSITION")
    assert [tuple(r) for r in cur.fetchall()] == [
        ("id", "bigint", None, 19, 0, None, "NO"), ("name", "nvarchar", -1, None, None, None, "YES"),
        ("amount", "decimal", None, 12, 2, None, "YES"), ("ts", "datetime2", None, None, None, 3, "YES")]
    cur.execute("SELECT c.name, t.name, c.max_length, c.precision, c.scale, c.is_nullable, c.column_id FROM sys.columns AS c "
                "JOIN sys.types AS t ON t.user_type_id = c.user_type_id WHERE c.object_id = OBJECT_ID(N'[dbo].[life]') "
                "ORDER BY c.column_id")
    assert [tuple(r) for r in cur.fetchall()] == [("id", "bigint", 8, 19, 0, False, 1), ("name", "nvarchar", -1, 0, 0, True, 2),
                                                  ("amount", "decimal", 9, 12, 2, True, 3), ("ts", "datetime2", 7, 23, 3, True, 4)]
    cur.execute("SELECT TOP 0 * FROM [dbo].[life]")
    assert [d[0] for d in cur.description] == ["id", "name", "amount", "ts"] and cur.fetchall() == []
    cur.execute("EXEC sys.sp_tableoption N'[dbo].[life]', 'table lock on bulk load', 'ON'")
    cur.execute("SELECT lock_on_bulk_load FROM sys.tables WHERE name = N'life'")
    assert cur.fetchone()[0] is True
    cur.execute("EXEC sp_rename N'[dbo].[life]', N'life2'")
    cur.execute("SELECT OBJECT_ID(N'[dbo].[life]'), OBJECT_ID(N'dbo.life2')")
    old, new = cur.fetchone()
    assert old is None and new is not None
    cur.execute("TRUNCATE TABLE [dbo].[life2]")
    cur.execute("DROP TABLE [dbo].[life2]")
    with pytest.raises(pytds.tds_base.Error) as e:
        cur.execute("DROP TABLE [dbo].[life2]")
    assert "Cannot drop the table 'life2'" in str(e.value)
    cur.execute("DROP TABLE IF EXISTS [dbo].[life2]")
    conn.close()


def test_applock_serialises_sessions(peer):
    a, b = pytds_connect(peer, autocommit=False), pytds_connect(peer, autocommit=False)
    ca, cb = a.cursor(), b.cursor()
    plain = ("EXEC sp_getapplock @Resource=N'delta-funnel:replace:[dbo].[x]', @LockMode='Exclusive', @LockOwner='Transaction', "
             "@LockTimeout=0")
    ca.execute(plain)
    assert ca.get_proc_return_status() == 0
    cb.execute(plain)
    assert cb.get_proc_return_status() == -1
    a.commit()
    cb.execute(plain)
    assert cb.get_proc_return_status() == 0
    b.rollback()
    a.close()
    b.close()


def test_unsupported_statements_get_errors_not_hangs(peer):
    conn = pytds_connect(peer)
    cur = conn.cursor()
    for sql, number in [("DECLARE @x int", 102), ("MERGE t USING s ON 1=1", 102), ("SELECT * FROM nowhere", 208),
                        ("EXEC sp_who", 2812), ("SELECT 'unterminated", 105), ("COMMIT", 3902)]:
        with pytest.raises(pytds.tds_base.Error) as e:
            cur.execute(sql)
        assert e.value.msg_no == number, sql
    cur.execute("SELECT 1")
    assert cur.fetchone()[0] == 1
    conn.close()


def test_rpc_sp_executesql_binds_parameters(peer):
    conn = pytds_connect(peer)
    cur = conn.cursor()
    cur.execute("CREATE TABLE rpc_t (id int NOT NULL, s nvarchar(20), d decimal(10,2), ts datetime2(3))")
    cur.execute("INSERT INTO rpc_t VALUES (%s, %s, %s, %s)", (1, "it's", decimal.Decimal("1.25"), dt.datetime(2024, 1, 2, 3, 4, 5)))
    cur.execute("SELECT id, s, d, ts FROM rpc_t WHERE id = %s AND s = %s", (1, "it's"))
    assert cur.fetchall() == [(1, "it's", decimal.Decimal("1.25"), dt.datetime(2024, 1, 2, 3, 4, 5))]
    cur.callproc("sp_executesql", ("SELECT @a + 1 AS n", "@a int", 41))
    assert cur.fetchall() == [(42,)]
    conn.close()
