"""The reference implementation (deltafunnel 0.6, Rust/tiberius) loads a Delta
table into the peer: an independent TDS client exercising login-only TLS,
RPC sp_executesql, the existence probe, CREATE TABLE, SELECT TOP 0,
INSERT BULK and COUNT_BIG.  Needs a Python with deltafunnel==0.6.0 named
by DF_REFERENCE_PYTHON; skipped otherwise."""

import decimal
import json
import os
import subprocess

import pytest

from mssql_peer import Peer, pytds_connect

pa = pytest.importorskip("pyarrow")
deltalake = pytest.importorskip("deltalake")
pytest.importorskip("pytds")

SCRIPT = r"""
import json, sys, deltafunnel
uri, cs = sys.argv[1], sys.argv[2]
s = deltafunnel.Session(default_mssql_connection_string=cs)
t = s.delta_lake(uri, name="src")
r = t.write_to_mssql(schema="dbo", table="ref_load", load_mode="create_and_load")
print(json.dumps({"rows": r["write_stats"]["rows_written"], "validation": r["validation_status"]["kind"]}))
"""


def test_reference_create_and_load_into_the_peer(tmp_path):
    python = os.environ.get("DF_REFERENCE_PYTHON")
    if not python:
        pytest.skip("DF_REFERENCE_PYTHON (a Python with deltafunnel==0.6.0) is not set")
    n = 5000
    table = pa.table({
        "id": pa.array(range(n), pa.int64()),
        "name": pa.array([f"name {i} ✓" if i % 7 else None for i in range(n)]),
        "amount": pa.array([decimal.Decimal(i).scaleb(-2) for i in range(n)], pa.decimal128(12, 2)),
        "ts": pa.array([i * 1_000_000 for i in range(n)], pa.timestamp("us")),
    })
    deltalake.write_deltalake(str(tmp_path / "src"), table)
    with Peer() as peer:
        out = subprocess.run([python, "-c", SCRIPT, str(tmp_path / "src"), peer.conn_str()], capture_output=True, text=True,
                             timeout=300)
        assert out.returncode == 0, out.stderr[-3000:]
        report = json.loads(out.stdout.strip().splitlines()[-1])
        assert report == {"rows": n, "validation": "passed"}
        conn = pytds_connect(peer)
        cur = conn.cursor()
        cur.execute("SELECT COUNT_BIG(*), SUM(CASE WHEN name IS NULL THEN 1 ELSE 0 END) FROM dbo.ref_load")
        assert tuple(cur.fetchone()) == (n, len(range(0, n, 7)))
        cur.execute("SELECT id, name, amount FROM dbo.ref_load WHERE id = 1234")
        assert tuple(cur.fetchone()) == (1234, "name 1234 ✓", decimal.Decimal("12.34"))
        conn.close()
        trace = peer.trace_text()
        assert "tls wrapped: TLSv1.2" in trace and "rpc sp_executesql" in trace and "insert bulk dbo.ref_load" in trace
