"""Connection strings and connect failures as Python users see them:
unknown keys are refused by name (never echoing a value or the string),
keys Microsoft's drivers know that change nothing here are accepted with
one logged warning, and a server's message reaches DeltaFunnelError as the
server wrote it (escaped once, quotes kept)."""

import json
import subprocess
import sys
import textwrap

import pytest

from mssql_peer import PASSWORD, Peer

deltafunnel = pytest.importorskip("deltafunnel")
pa = pytest.importorskip("pyarrow")
deltalake = pytest.importorskip("deltalake")


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    path = tmp_path_factory.mktemp("conn") / "src"
    deltalake.write_deltalake(str(path), pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    return path


@pytest.fixture(scope="module")
def peer():
    with Peer() as p:
        yield p


def _write(source, conn, table="t", mode="create_and_load"):
    s = deltafunnel.Session(default_mssql_connection_string=conn)
    return s.delta_lake(str(source), name="src").write_to_mssql(schema="dbo", table=table, load_mode=mode)


def test_unknown_key_is_refused_by_name(peer, source):
    conn = peer.conn_str() + ";Encrpyt=no"
    with pytest.raises(deltafunnel.DeltaFunnelError) as e:
        _write(source, conn, table="unknown_key")
    err = e.value
    assert err.phase == "connect" and err.kind == "mssql_write_phase"
    assert "unknown key 'Encrpyt'" in err.message
    shown = str(err) + repr(err) + json.dumps(err.context)
    assert PASSWORD not in shown and "Server=" not in shown and f"{peer.port}" not in err.message


def test_bad_value_names_the_key_never_the_value(peer, source):
    with pytest.raises(deltafunnel.DeltaFunnelError) as e:
        _write(source, peer.conn_str(**{"Packet Size": "huge-value-1"}), table="bad_value")
    assert "Packet Size" in e.value.message and "huge-value-1" not in str(e.value) + json.dumps(e.value.context)


def test_server_message_is_escaped_once(peer, source):
    """The peer's login failure reaches Python as "Login failed for user 'sa'." (no backslashes)."""
    with pytest.raises(deltafunnel.DeltaFunnelError) as e:
        _write(source, peer.conn_str(password="not-the-password"), table="login_failure")
    err = e.value
    assert err.phase == "connect"
    assert "Login failed for user 'sa'." in err.message
    assert "Login failed for user 'sa'." in str(err)
    assert "\\" not in err.message
    assert "not-the-password" not in str(err) + json.dumps(err.context)


SCRIPT = textwrap.dedent(r"""
    import json, logging, sys
    import deltafunnel
    path, conn = sys.argv[1:3]
    records = []
    class Keep(logging.Handler):
        def emit(self, record):
            records.append({"level": record.levelname, "msg": record.getMessage(),
                            "extra": {k: v for k, v in vars(record).items() if k.startswith("deltafunnel_")}})
    log = logging.getLogger("dfconn")
    log.setLevel(logging.DEBUG)
    log.addHandler(Keep())
    deltafunnel.init_logging(logger="dfconn")
    s = deltafunnel.Session(default_mssql_connection_string=conn)
    report = s.delta_lake(path, name="src").write_to_mssql(schema="dbo", table="ignored_keys",
                                                         load_mode="create_and_load")
    print("RESULT", json.dumps({"rows": report["output_row_count"], "records": records}))
""")


def test_keys_without_effect_are_accepted_with_one_warning(peer, source):
    conn = peer.conn_str(Pooling="false", **{"Max Pool Size": "5", "MultipleActiveResultSets": "True",
                                             "Persist Security Info": "False"})
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(source), conn], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.split("RESULT ", 1)[1])
    assert result["rows"]["value"] == 3
    warnings = [r for r in result["records"] if r["extra"].get("deltafunnel_telemetry_event") ==
                "connection_string.keys_ignored"]
    assert len(warnings) == 1, result["records"]
    assert warnings[0]["level"] == "WARNING"
    assert warnings[0]["extra"]["deltafunnel_keys"] == \
        "Pooling, Max Pool Size, MultipleActiveResultSets, Persist Security Info"
    assert PASSWORD not in proc.stdout + proc.stderr
