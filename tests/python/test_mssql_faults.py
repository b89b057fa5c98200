"""Failure paths of our client against the peer's fault injection: every one
ends with a clear error kind, releases the connection and never hangs, and
a failed load commits nothing."""

import socket
import time

import pytest

from mssql_peer import Client, ClientError, Peer, pytds_connect

pa = pytest.importorskip("pyarrow")


@pytest.fixture(scope="module")
def client(dftest):
    return Client(dftest)


def _rows(n):
    return pa.table({"id": pa.array(range(n), pa.int32()), "s": pa.array([f"value {i}" for i in range(n)])})


SPEC = "id int NOT NULL;s nvarchar(40)"


def _count(peer, table):
    pytds = pytest.importorskip("pytds")
    del pytds
    conn = pytds_connect(peer)
    cur = conn.cursor()
    cur.execute(f"SELECT COUNT_BIG(*) FROM {table}")
    n = cur.fetchone()[0]
    conn.close()
    return n


def test_login_failures(client):
    with Peer() as p:
        with pytest.raises(ClientError) as e:
            client.exec(p.conn_str(password="wrong"), "SELECT 1")
        assert (e.value.kind, e.value.code) == ("mssql_login_failed", 18456)
        assert "Login failed for user 'sa'." in e.value.message
        with pytest.raises(ClientError) as e:
            client.exec(p.conn_str(database="nowhere"), "SELECT 1")
        assert (e.value.kind, e.value.code) == ("mssql_login_failed", 4060)
    with Peer("--fault-refuse-logins") as p:
        with pytest.raises(ClientError) as e:
            client.exec(p.conn_str(), "SELECT 1")
        assert e.value.kind == "mssql_login_failed"
    with Peer("--fault-drop-after-login7") as p:
        with pytest.raises(ClientError) as e:
            client.exec(p.conn_str(), "SELECT 1")
        assert e.value.kind == "mssql_connect"


def test_unreachable_and_silent_servers_fail_in_time(client):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(ClientError) as e:
        client.exec(f"server=tcp:127.0.0.1,{port};uid=sa;pwd=x", "SELECT 1")
    assert e.value.kind == "mssql_connect"
    with Peer("--fault-login-delay-ms", "5000") as p:
        t0 = time.monotonic()
        with pytest.raises(ClientError) as e:
            client.exec(p.conn_str(**{"Connect Timeout": 1}), "SELECT 1")
        assert e.value.kind == "mssql_connect"
        assert time.monotonic() - t0 < 4


def test_connection_dropped_mid_load(client):
    with Peer("--fault-drop-after-rows", "1000") as p:
        client.exec(p.conn_str(), "CREATE TABLE d (id int NOT NULL, s nvarchar(40))")
        with pytest.raises(ClientError) as e:
            client.bulk_load(p.conn_str(), "[dbo].[d]", SPEC, _rows(200000))
        assert e.value.kind == "mssql_connection_lost"
        assert _count(p, "d") == 0
    with Peer("--fault-drop-after-bytes", "20000") as p:
        client.exec(p.conn_str(), "CREATE TABLE d (id int NOT NULL, s nvarchar(40))")
        with pytest.raises(ClientError) as e:
            client.bulk_load(p.conn_str(), "[dbo].[d]", SPEC, _rows(200000))
        assert e.value.kind == "mssql_connection_lost"
        assert _count(p, "d") == 0


@pytest.mark.parametrize("number", [4815, 515])
def test_server_error_mid_load(client, number):
    with Peer("--fault-error-after-rows", "100", "--fault-error-number", str(number)) as p:
        client.exec(p.conn_str(), "CREATE TABLE e (id int NOT NULL, s nvarchar(40))")
        with pytest.raises(ClientError) as e:
            client.bulk_load(p.conn_str(), "[dbo].[e]", SPEC, _rows(5000))
        assert (e.value.kind, e.value.code) == ("mssql_server_error", number)
        assert _count(p, "e") == 0
        # the fault fires once: the next load succeeds on a fresh connection
        assert client.bulk_load(p.conn_str(), "[dbo].[e]", SPEC, _rows(5000)) == 5000
        assert _count(p, "e") == 5000


def test_statement_failure_injection(client):
    with Peer("--fault-fail-statement", "INSERT BULK=4891", "--fault-fail-statement", "sp_rename=15248") as p:
        cs = p.conn_str()
        client.exec(cs, "CREATE TABLE f (id int NOT NULL, s nvarchar(40))")
        with pytest.raises(ClientError) as e:
            client.bulk_load(cs, "[dbo].[f]", SPEC, _rows(10))
        assert (e.value.kind, e.value.code) == ("mssql_server_error", 4891)
        with pytest.raises(ClientError) as e:
            client.exec(cs, "EXEC sp_rename N'[dbo].[f]', N'g'")
        assert e.value.code == 15248
        client.exec(cs, "EXEC sp_rename N'[dbo].[f]', N'g'")
        assert client.bulk_load(cs, "[dbo].[g]", SPEC, _rows(10)) == 10


def test_slow_server_times_out_with_attention(client):
    with Peer("--fault-delay-ms", "3000") as p:
        t0 = time.monotonic()
        with pytest.raises(ClientError) as e:
            client.exec(p.conn_str(), "SELECT 1", timeout_ms=500)
        assert e.value.kind == "timeout"
        assert time.monotonic() - t0 < 8
        assert "attention during delay" in p.trace_text()


def test_split_replies_nbcrow_and_forced_packet_size(client):
    with Peer("--reply-packet-size", "512", "--nbcrow", "--packet-size", "512") as p:
        cs = p.conn_str()
        assert client.connect_info(cs)["packet_size"] == "512"
        client.exec(cs, "CREATE TABLE n (id int NOT NULL, a nvarchar(max), b int, c decimal(20,5))")
        big = "ü" * 3000
        client.exec(cs, f"INSERT INTO n VALUES (1, N'{big}', NULL, 1.5), (2, NULL, 7, NULL), (3, NULL, NULL, NULL)")
        t = client.query(cs, "SELECT id, a, b, c FROM n ORDER BY id")
        assert t.column("a").to_pylist() == [big, None, None]
        assert t.column("b").to_pylist() == [None, 7, None]
        assert [str(x) if x is not None else None for x in t.column("c").to_pylist()] == ["1.50000", None, None]
        assert client.bulk_load(cs, "[dbo].[n]", "id int NOT NULL;a nvarchar(max);b int",
                                pa.table({"id": pa.array([4], pa.int32()), "a": [big * 10], "b": pa.array([None], pa.int32())})) == 1
        assert client.query(cs, "SELECT a FROM n WHERE id = 4").column(0).to_pylist() == [big * 10]


def test_server_rejecting_the_stream_and_closing_reports_its_error(client):
    """Like SQL Server, the peer may answer ERROR + DONE and close before reading
    the rest: the client's send fails, and it reports the server's error."""
    with Peer("--fault-error-after-rows", "100", "--fault-error-close") as p:
        client.exec(p.conn_str(), "CREATE TABLE e (id int NOT NULL, s nvarchar(40))")
        with pytest.raises(ClientError) as e:
            client.bulk_load(p.conn_str(), "[dbo].[e]", SPEC, _rows(300000))
        assert (e.value.kind, e.value.code) in {("mssql_server_error", 4815), ("mssql_connection_lost", 0)}
        assert _count(p, "e") == 0
