"""Secrets never leak from writes: a distinctive password and a distinctive
storage_options value appear in no report, error, context, repr, log
record or progress line; init_logging() bridges write events to Python
logging with the reference's extra fields."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from mssql_peer import Peer, peer_binary

pytest.importorskip("deltafunnel")
pytest.importorskip("deltalake")

PASSWORD = "Pw-7f3a9Q-Distinct"
STORAGE_SECRET = "SO-Value-77xq-Distinct"

SCRIPT = textwrap.dedent(r"""
    import io, json, logging, sys
    import pyarrow as pa, deltalake, deltafunnel
    path, good, bad, secret = sys.argv[1:5]
    deltalake.write_deltalake(path, pa.table({"id": pa.array([1, 2, 3], pa.int64()), "s": ["a", "b", "c"]}))
    records = []
    class Keep(logging.Handler):
        def emit(self, record):
            records.append({"msg": record.getMessage(),
                            "extra": {k: v for k, v in vars(record).items() if k.startswith("deltafunnel_")}})
    log = logging.getLogger("dfwrite")
    log.setLevel(logging.DEBUG)
    log.addHandler(Keep())
    print("INSTALLED", deltafunnel.init_logging(logger="dfwrite"), deltafunnel.init_logging(logger="other"))
    s = deltafunnel.Session(default_mssql_connection_string=good)
    t = s.delta_lake(path, name="src", storage_options={"aws_secret_access_key": secret})
    out = []
    out.append(json.dumps(t.write_to_mssql(schema="dbo", table="ok", load_mode="create_and_load", progress=True,
                                           execution_profile=True)))
    out.append(json.dumps(t.write_to_mssql(schema="dbo", table="ok", load_mode="replace", dry_run=True)))
    for mode in ("append_existing", "replace", "create_and_load"):
        try:
            t.write_to_mssql(schema="dbo", table="zz", load_mode=mode, connection_string=bad, progress=True)
        except deltafunnel.DeltaFunnelError as e:
            out.append(str(e) + json.dumps(e.context) + repr(e))
    o1 = t.to_mssql(schema="dbo", table="w1", load_mode="replace", connection_string=good)
    o2 = t.to_mssql(schema="dbo", table="w2", load_mode="append_existing", connection_string=bad)
    out.append(repr(o1) + repr(o2) + repr(s) + repr(t))
    out.append(json.dumps(s.write_all([o1, o2], progress=True)))
    out.append(json.dumps(s.write_all([o1, o2], dry_run=True)))
    out.append(json.dumps(records))
    print("RESULT", json.dumps(out))
""")


def test_no_secret_in_reports_errors_logs_or_progress(tmp_path):
    with Peer(logins=(("sa", PASSWORD),)) as peer:
        good = peer.conn_str(password=PASSWORD)
        bad = f"server=tcp:127.0.0.1,{peer.port};user id=sa;password={PASSWORD}x;TrustServerCertificate=true"
        env = dict(os.environ, DELTAFUNNEL_LOG="delta_funnel=trace")
        proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "t"), good, bad, STORAGE_SECRET],
                              capture_output=True, text=True, timeout=300, env=env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        everything = proc.stdout + proc.stderr + peer.trace_text().replace(PASSWORD, "")
        for secret in (PASSWORD, STORAGE_SECRET, "Pw-7f3a9Q", "77xq"):
            assert secret not in everything
        assert "Completed" in proc.stderr and "Failed" in proc.stderr
        assert "INSTALLED True False" in proc.stdout
        out = json.loads(proc.stdout.split("RESULT ", 1)[1])
        records = json.loads(out[-1])
        events = [r["extra"].get("deltafunnel_telemetry_event") for r in records]
        for event in ("output.started", "output.completed", "output.failed", "workflow.started", "workflow.completed"):
            assert event in events, events
        completed = next(r for r in records if r["extra"].get("deltafunnel_telemetry_event") == "output.completed")
        assert completed["extra"]["deltafunnel_target"] == "delta_funnel"
        assert completed["extra"]["deltafunnel_level"] == "INFO"
        assert completed["extra"]["deltafunnel_output_name"] == "ok"
        assert completed["extra"]["deltafunnel_load_mode"] == "create_and_load"
        failed = next(r for r in records if r["extra"].get("deltafunnel_telemetry_event") == "output.failed")
        assert failed["extra"]["deltafunnel_level"] == "ERROR"
        assert failed["extra"]["deltafunnel_error_category"] == "delta_funnel_error"
