"""`deltafunnel load JOB`: TOML and JSON job files, dry runs, the JSON
report on stdout and the documented exit codes (docs/jobs.md)."""

import json
import os
import subprocess

import pytest

from mssql_peer import Peer, peer_rows, peer_tables

pa = pytest.importorskip("pyarrow")
deltalake = pytest.importorskip("deltalake")
pytest.importorskip("pytds")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("job")
    deltalake.write_deltalake(str(d / "orders"), pa.table({
        "id": pa.array([1, 2, 3, 4], pa.int64()),
        "status": ["new", "paid", "paid", "new"],
        "amount": pa.array([10.5, 20.0, 30.25, 1.0], pa.float64()),
    }))
    return d


TOML_JOB = r'''
# A load job: sources, SQL tables, outputs.
[session]
default_mssql_connection_string = "env:DF_TEST_MSSQL"
output_batch_size = 2

[session.validation_options]
target_validation_mode = "require"

[[sources]]
name = "orders"
uri = "orders"            # relative to this file

[[tables]]
alias = "paid"
sql = """
SELECT id, amount
FROM orders
WHERE status = 'paid'
"""

[[outputs]]
from = "paid"
schema = "dbo"
table = "paid_orders"
load_mode = "replace"

[[outputs]]
sql = "SELECT status, COUNT(*) AS n FROM orders GROUP BY status"
schema = "dbo"
table = "status_counts"
load_mode = "create_and_load"
name = "counts"

[options]
cache_mode = "auto"
'''


def _run(cli, job, *args, env=None):
    return subprocess.run([cli, "load", str(job), *args], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, **(env or {})))


def test_toml_job_loads_and_reports(cli, workdir):
    job = workdir / "job.toml"
    job.write_text(TOML_JOB)
    with Peer() as peer:
        proc = _run(cli, job, "--progress", "--log", "info", env={"DF_TEST_MSSQL": peer.conn_str()})
        assert proc.returncode == 0, proc.stderr
        report = json.loads(proc.stdout)
        assert report["all_succeeded"] is True and report["output_count"] == 2
        assert [o["output_name"] for o in report["workflow"]["outputs"]] == ["paid_orders", "counts"]
        assert sorted(peer_rows(peer, "SELECT id FROM dbo.paid_orders")) == [(2,), (3,)]
        assert sorted(peer_rows(peer, "SELECT status, n FROM dbo.status_counts")) == [("new", 2), ("paid", 2)]
        assert "Completed" in proc.stderr
        events = [json.loads(line) for line in proc.stderr.splitlines() if line.startswith("{")]
        assert any(e["event"] == "output.completed" for e in events)
        assert "Secret" not in proc.stderr + proc.stdout


def test_json_job_dry_run_never_connects(cli, workdir):
    job = workdir / "job.json"
    job.write_text(json.dumps({
        "session": {"default_mssql_connection_string": "server=tcp:127.0.0.1,1;user id=u;password=Hidden-Pw-1"},
        "sources": [{"name": "orders", "uri": str(workdir / "orders")}],
        "outputs": [{"from": "orders", "schema": "dbo", "table": "copy", "load_mode": "create_and_load"}],
    }))
    proc = _run(cli, job, "--dry-run")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["run_mode"] == "dry_run"
    assert report["outputs"][0]["dry_run"]["sql_server_contacted"] is False
    assert "Hidden-Pw-1" not in proc.stdout + proc.stderr


def test_failed_outputs_exit_4(cli, workdir):
    job = workdir / "fail.toml"
    job.write_text(f'''
[session]
default_mssql_connection_string = "env:DF_TEST_MSSQL"
[[sources]]
name = "orders"
uri = "{workdir / 'orders'}"
[[outputs]]
from = "orders"
schema = "dbo"
table = "missing"
load_mode = "append_existing"
[[outputs]]
from = "orders"
schema = "dbo"
table = "never"
load_mode = "create_and_load"
''')
    with Peer() as peer:
        proc = _run(cli, job, env={"DF_TEST_MSSQL": peer.conn_str()})
        assert proc.returncode == 4, proc.stderr
        report = json.loads(proc.stdout)
        assert (report["failed_count"], report["skipped_count"]) == (1, 1)
        assert "never" not in peer_tables(peer)


@pytest.mark.parametrize("text,needle", [
    ("[session]\nunknown_key = 1\n", "unknown key `unknown_key`"),
    ("[[sources]]\nname = \"a\"\n", "needs `name` and `uri`"),
    ("x = \"unterminated\n", "line 1"),
    ("[a]\n[a]\n", "defined twice"),
    ("when = 1979-05-27\n", "dates and times"),
    ("[session]\ndefault_mssql_connection_string = \"env:DF_NOT_SET_ANYWHERE\"\n", "DF_NOT_SET_ANYWHERE"),
    ("[[outputs]]\nfrom = \"nope\"\nschema = \"dbo\"\ntable = \"t\"\nload_mode = \"replace\"\n", "`nope`"),
])
def test_invalid_job_files_exit_3(cli, workdir, text, needle):
    job = workdir / "bad.toml"
    job.write_text(text)
    proc = _run(cli, job)
    assert proc.returncode == 3, (proc.returncode, proc.stderr)
    assert needle in proc.stderr
    err = json.loads(proc.stdout)["error"]
    assert err["phase"] == "config"


def test_usage_errors_exit_2(cli):
    assert subprocess.run([cli, "load"], capture_output=True).returncode == 2
    assert subprocess.run([cli, "load", "x.toml", "--bogus"], capture_output=True).returncode == 2
    help_text = subprocess.run([cli, "load", "--help"], capture_output=True, text=True)
    assert help_text.returncode == 0 and "Exit codes" in help_text.stdout
