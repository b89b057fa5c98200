"""TLS between our client and the peer (login-only, full, TDS 8.0 strict),
certificate validation, and the peer's strict handshake checked with
Python's own ssl module offering ALPN tds/8.0 (FreeTDS 1.3 and python-tds
have no strict mode)."""

import re
import socket
import ssl
import struct
import time

import pyarrow as pa
import pytest

from mssql_peer import PASSWORD, Client, ClientError, Peer, make_certificate


@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    return make_certificate(tmp_path_factory.mktemp("cert"))


@pytest.fixture(scope="module")
def client(dftest):
    return Client(dftest)


def tls_peer(cert, mode):
    return Peer("--tls", mode, "--cert", cert[0], "--key", cert[1])


def _post_login_requests(peer, sessions):
    """(over TLS, in plaintext) request counts of the peer's ended sessions, once `sessions` of them ended."""
    pattern = re.compile(r"requests after login: (\d+) over TLS, (\d+) in plaintext")
    deadline = time.monotonic() + 10
    while True:
        found = [tuple(int(x) for x in m.groups()) for m in pattern.finditer(peer.trace_text())]
        if len(found) >= sessions or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def test_login_only_and_full_encryption(cert, client):
    with tls_peer(cert, "optional") as p:
        assert client.connect_info(p.conn_str(encrypt="optional"))["encryption"] == "login-only"
        assert client.connect_info(p.conn_str(encrypt="no"))["encryption"] == "login-only"
        assert client.connect_info(p.conn_str(encrypt="yes"))["encryption"] == "TLSv1.2"
        assert client.connect_info(p.conn_str(encrypt="DANGER_PLAINTEXT"))["encryption"] == "none"
        rows = client.exec(p.conn_str(encrypt="mandatory"), "CREATE TABLE t (a int); INSERT INTO t VALUES (1), (2)")
        assert rows == 2
    with tls_peer(cert, "required") as p:
        assert client.connect_info(p.conn_str())["encryption"] == "TLSv1.2"
        with pytest.raises(ClientError) as e:
            client.connect_info(p.conn_str(encrypt="DANGER_PLAINTEXT"))
        assert e.value.kind == "mssql_tls"
    with Peer("--tls", "off") as p:
        assert client.connect_info(p.conn_str(encrypt="optional"))["encryption"] == "none"
        with pytest.raises(ClientError) as e:
            client.connect_info(p.conn_str(encrypt="true"))
        assert e.value.kind == "mssql_tls"


def test_default_encrypts_the_whole_session(cert, client):
    """No Encrypt key: TLS for everything after PRELOGIN, which the peer confirms request by request."""
    with tls_peer(cert, "optional") as p:
        cs = p.conn_str()  # TrustServerCertificate=true, no Encrypt
        assert "encrypt" not in cs.lower().replace("trustservercertificate", "")
        assert client.connect_info(cs)["encryption"] == "TLSv1.2"
        client.exec(cs, "CREATE TABLE t (a int); INSERT INTO t VALUES (1), (2)")
        assert client.query(cs, "SELECT COUNT(*) AS n FROM t").column(0).to_pylist() == [2]
        table = pa.table({"a": pa.array(range(5000), pa.int32())})
        assert client.bulk_load(cs, "[dbo].[t]", "a int", table) == 5000
        counts = _post_login_requests(p, 4)
        # connect_info sends nothing after the login; exec, query and the bulk load (INSERT BULK + BULK_LOAD) do
        assert counts == [(0, 0), (1, 0), (1, 0), (2, 0)], counts
        # Encrypt=optional against the same server: only LOGIN7 is encrypted, the requests are not
        client.exec(p.conn_str(encrypt="optional"), "SELECT 1")
        counts = _post_login_requests(p, 5)
        assert counts[-1][0] == 0 and counts[-1][1] > 0, counts


def test_default_refuses_a_server_without_encryption(client):
    """A server (or anyone in the path) answering ENCRYPT_NOT_SUP never sees the login."""
    with Peer("--tls", "off") as p:
        with pytest.raises(ClientError) as e:
            client.connect_info(p.conn_str())
        assert e.value.kind == "mssql_tls"
        assert "Encrypt=optional" in e.value.message and "ENCRYPT_NOT_SUP" in e.value.message
        assert PASSWORD not in e.value.message
        trace = p.trace_text()
        assert "prelogin: client encryption 1, answer 2" in trace
        assert "] login: " not in trace
        # opting out explicitly keeps today's behaviour: a plaintext session
        cs = p.conn_str(encrypt="optional")
        assert client.connect_info(cs)["encryption"] == "none"
        assert client.exec(cs, "CREATE TABLE t (a int); INSERT INTO t VALUES (1)") == 1


def test_default_validates_the_certificate_and_names_the_options_that_relax_it(cert, client):
    with tls_peer(cert, "optional") as p:
        with pytest.raises(ClientError) as e:
            client.connect_info(p.conn_str(TrustServerCertificate=None))
        assert e.value.kind == "mssql_tls" and "self-signed" in e.value.message
        assert "TrustServerCertificate=yes" in e.value.message
        assert "TrustServerCertificateCA=" in e.value.message
        assert "] login: " not in p.trace_text()
        ok = p.conn_str(TrustServerCertificate=None, TrustServerCertificateCA=str(cert[0]))
        assert client.connect_info(ok)["encryption"] == "TLSv1.2"
        # the name checked is the Server host (127.0.0.1 and localhost are SANs of the certificate) ...
        assert client.connect_info(ok.replace(f"tcp:{p.host},", "tcp:localhost,"))["encryption"] == "TLSv1.2"
        # ... or HostNameInCertificate
        with pytest.raises(ClientError) as e:
            client.connect_info(ok + ";HostNameInCertificate=db.example.com")
        assert e.value.kind == "mssql_tls" and "hostname" in e.value.message
        assert "TrustServerCertificate=yes" in e.value.message


def test_certificate_validation(cert, client):
    with tls_peer(cert, "optional") as p:
        with pytest.raises(ClientError) as e:
            client.connect_info(p.conn_str(encrypt="true", TrustServerCertificate="false"))
        assert e.value.kind == "mssql_tls" and "self-signed" in e.value.message
        ok = p.conn_str(encrypt="true", TrustServerCertificate=None, TrustServerCertificateCA=str(cert[0]))
        assert client.connect_info(ok)["encryption"] == "TLSv1.2"
        with pytest.raises(ClientError) as e:
            client.connect_info(ok + ";HostNameInCertificate=db.example.com")
        assert e.value.kind == "mssql_tls" and "hostname" in e.value.message
        assert client.connect_info(ok + ";HostNameInCertificate=localhost")["encryption"] == "TLSv1.2"


def test_strict_mode_between_our_client_and_the_peer(cert, client):
    with tls_peer(cert, "strict") as p:
        cs = p.conn_str(encrypt="strict", TrustServerCertificate=None, TrustServerCertificateCA=str(cert[0]))
        info = client.connect_info(cs)
        assert info["encryption"] == "TLSv1.3"
        client.exec(cs, "CREATE TABLE s (a int)")
        assert client.query(cs, "SELECT COUNT(*) AS n FROM s").column(0).to_pylist() == [0]
        # strict always validates the certificate: TrustServerCertificate does not relax it
        with pytest.raises(ClientError) as e:
            client.connect_info(p.conn_str(encrypt="strict"))
        assert e.value.kind == "mssql_tls"
        # a strict-only server refuses TDS 7.x
        with pytest.raises(ClientError) as e:
            client.connect_info(p.conn_str())
        assert e.value.kind == "mssql_connect"


def _prelogin_payload():
    opts = [(0, b"\x00\x01\x00\x00\x00\x00"), (1, b"\x02"), (2, b"\x00"), (3, b"\x00\x00\x00\x00"), (4, b"\x00")]
    offset = 5 * len(opts) + 1
    table, data = b"", b""
    for tok, val in opts:
        table += struct.pack(">BHH", tok, offset + len(data), len(val))
        data += val
    return table + b"\xff" + data


def test_peer_strict_handshake_with_a_plain_tls_client(cert):
    """Python's ssl offering ALPN tds/8.0, then PRELOGIN inside TLS."""
    with tls_peer(cert, "strict") as p:
        ctx = ssl.create_default_context(cafile=str(cert[0]))
        ctx.set_alpn_protocols(["tds/8.0"])
        with socket.create_connection((p.host, p.port), timeout=10) as raw:
            with ctx.wrap_socket(raw, server_hostname="localhost") as tls:
                assert tls.selected_alpn_protocol() == "tds/8.0"
                assert tls.version() in ("TLSv1.2", "TLSv1.3")
                payload = _prelogin_payload()
                tls.sendall(struct.pack(">BBHHBB", 0x12, 0x01, 8 + len(payload), 0, 1, 0) + payload)
                header = tls.recv(8)
                assert header[0] == 0x04 and header[1] & 1
                body = b""
                while len(body) < struct.unpack(">H", header[2:4])[0] - 8:
                    body += tls.recv(4096)
                assert body[0] == 0x00  # VERSION first
                tokens = [body[i] for i in range(0, body.index(b"\xff"), 5)]
                assert tokens[:5] == [0, 1, 2, 3, 4]  # MARS present, as FreeTDS needs
        # an offer without tds/8.0 is refused
        ctx2 = ssl.create_default_context(cafile=str(cert[0]))
        ctx2.set_alpn_protocols(["http/1.1"])
        with socket.create_connection((p.host, p.port), timeout=10) as raw:
            with pytest.raises((ssl.SSLError, ConnectionError)):
                with ctx2.wrap_socket(raw, server_hostname="localhost") as tls:
                    tls.sendall(b"\x12")
                    tls.recv(1)


def test_wrapped_handshake_is_capped_at_tls12_unless_configured(cert, client):
    with Peer("--cert", cert[0], "--key", cert[1], "--tls13-in-7x") as p:
        # our client caps the wrapped handshake at TLS 1.2 itself
        assert client.connect_info(p.conn_str(encrypt="yes"))["encryption"] == "TLSv1.2"
