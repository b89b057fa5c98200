"""Secrets never reach diagnostics outputs.

A distinctive SQL Server password and a distinctive storage_options value
are used by real operations (a Delta source registration, previews, a
successful and a failing SQL Server write against the loopback peer) under
a whole-process capture (capture-workload: raw trace and HTML report) and
under operation-scoped ranked profiles (HTML report and .dfprofile).  None
of the files may contain either secret in any common encoding.
"""

import os
import pathlib
import subprocess
import sys

import pytest

deltafunnel = pytest.importorskip("deltafunnel")
mssql_peer = pytest.importorskip("mssql_peer")

PASSWORD = "Pw-Distinctive-4417!"
STORAGE_VALUE = "S3cr3t-Storage-Value-7781"


def encodings(secret):
    return [secret.encode(), secret.encode("utf-16-le"), secret.encode().hex().encode(),
            secret.replace("-", "\\u002d").encode()]


def assert_clean(path):
    data = pathlib.Path(path).read_bytes()
    assert data, path
    for secret in (PASSWORD, STORAGE_VALUE):
        for form in encodings(secret):
            assert form not in data, f"{path} contains a secret ({form!r})"


@pytest.fixture(scope="module")
def table(cli, tmp_path_factory):
    out = tmp_path_factory.mktemp("redact") / "t"
    subprocess.run([cli, "datagen", "--output", str(out), "--rows", "20000"], check=True, capture_output=True,
                   timeout=600)
    return out


@pytest.fixture(scope="module")
def peer():
    try:
        p = mssql_peer.Peer(logins=(("sa", PASSWORD),))
    except RuntimeError as e:
        pytest.skip(str(e))
    with p:
        yield p


def operations_code(table, conn, suffix, ranked_dir=None):
    """Python source running the operations (with ranked profiles into ranked_dir when given)."""
    def rp(name):
        if ranked_dir is None:
            return "None"
        return (f"deltafunnel.RankedProfileConfig({str(ranked_dir / (name + '.html'))!r}, "
                f"artifact_path={str(ranked_dir / (name + '.dfprofile'))!r}, sample_hz=100)")
    return (
        "import deltafunnel\n"
        f"s = deltafunnel.Session(default_mssql_connection_string={conn!r})\n"
        f"src = s.delta_lake({str(table)!r}, storage_options={{'aws_secret_access_key': {STORAGE_VALUE!r}}}, "
        "name='t')\n"
        "t = s.table_from_sql('SELECT id, quantity FROM t')\n"
        f"t.preview(5, ranked_profile={rp('preview')})\n"
        f"t.write_to_mssql(schema='dbo', table='good_{suffix}', load_mode='create_and_load', ranked_profile={rp('write')})\n"
        "try:\n"
        f"    t.write_to_mssql(schema='dbo', table='good_{suffix}', load_mode='create_and_load', ranked_profile={rp('fail')})\n"
        "except deltafunnel.DeltaFunnelError as e:\n"
        f"    assert {PASSWORD!r} not in str(e) and {PASSWORD!r} not in repr(e.context)\n"
        f"o = t.to_mssql(schema='dbo', table='all_{suffix}', load_mode='replace')\n"
        f"s.write_all([o], ranked_profile={rp('write_all')})\n"
    )


def test_secrets_are_absent_from_whole_process_traces_and_reports(table, peer, tmp_path):
    from deltafunnel import _perfetto
    conn = peer.conn_str(password=PASSWORD)
    wl = tmp_path / "wl.py"
    wl.write_text("import deltafunnel\nassert deltafunnel.init_perfetto_diagnostics() is True\n"
                  + operations_code(table, conn, "wp"))
    trace = tmp_path / "secret.pftrace"
    proc = subprocess.run([str(_perfetto.capture_workload_path()), "--output", str(trace), "--", sys.executable,
                           str(wl)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "report_status=0" in proc.stdout
    for f in (trace, tmp_path / "secret.profile.html"):
        assert_clean(f)
    for secret in (PASSWORD, STORAGE_VALUE):
        assert secret not in proc.stdout and secret not in proc.stderr
    # The whole trace was really written (operations of every kind are in it).
    data = trace.read_bytes()
    for name in (b"Delta Funnel preview", b"Delta Funnel SQL Server write", b"Delta Funnel SQL Server write_all"):
        assert name in data


def test_secrets_are_absent_from_ranked_profiles(table, peer, tmp_path):
    conn = peer.conn_str(password=PASSWORD)
    out = tmp_path / "ranked"
    code = operations_code(table, conn, "rp", ranked_dir=out)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    files = sorted(out.iterdir())
    assert {f.name for f in files} == {f"{n}.{e}" for n in ("preview", "write", "fail", "write_all")
                                       for e in ("html", "dfprofile")}
    for f in files:
        assert_clean(f)
