"""Promises of the reference's API and diagnostics guide that a user checks
by hand: the progress line's Delta file counter, DEBUG log events through
init_logging, and the guide's `delta-funnel-tracebox --version` step.

init_logging installs a process-wide bridge once, so the logging checks run
in a child interpreter of their own.
"""

import json
import os
import re
import subprocess
import sys
from importlib.resources import files

import pytest

import deltafunnel

pa = pytest.importorskip("pyarrow")
deltalake = pytest.importorskip("deltalake")


@pytest.fixture(scope="module")
def two_file_table(tmp_path_factory):
    """Two commits of 100 rows each, written by the deltalake package: two data files."""
    path = tmp_path_factory.mktemp("parity") / "t"
    deltalake.write_deltalake(str(path), pa.table({"a": pa.array(range(100), pa.int64()), "b": ["x"] * 100}))
    deltalake.write_deltalake(str(path), pa.table({"a": pa.array(range(100, 200), pa.int64()), "b": ["y"] * 100}),
                              mode="append")
    return path


def run_child(code, *args):
    proc = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "DELTAFUNNEL_LOG": ""})
    assert proc.returncode == 0, proc.stderr
    return proc


def test_progress_counts_delta_files(two_file_table):
    proc = run_child(
        "import sys, deltafunnel\n"
        "s = deltafunnel.Session()\n"
        "s.delta_lake(sys.argv[1], name='t')\n"
        "s.table_from_sql('SELECT b, count(*) FROM t GROUP BY b').preview(5, progress=True)\n"
        "s.table_from_sql('SELECT * FROM t WHERE a >= 150').preview(5, progress=True)\n",
        two_file_table)
    counters = re.findall(r"Delta files (\d+)/(\d+)", proc.stderr)
    assert counters, proc.stderr
    assert ("2", "2") in counters                      # the whole table: both files read
    assert all(int(done) <= int(total) for done, total in counters)
    # The filter prunes the first commit's file by its statistics while planning.
    assert re.search(r"Delta files 1/1 \| pruned ~1 in planning", proc.stderr), proc.stderr


LOGGING_CHILD = """
import json, logging, sys, deltafunnel
records = []
class Keep(logging.Handler):
    def emit(self, r):
        records.append({"level": r.levelname, "msg": r.getMessage(),
                        **{k[len("deltafunnel_"):]: v for k, v in r.__dict__.items() if k.startswith("deltafunnel_")}})
log = logging.getLogger("deltafunnel")
log.handlers = [Keep()]
log.setLevel(logging.DEBUG)
log.propagate = False
assert deltafunnel.init_logging(sys.argv[2])
s = deltafunnel.Session()
s.delta_lake(sys.argv[1], name="t")
s.table_from_sql("SELECT b, count(*) AS n FROM t GROUP BY b").preview(5, execution_profile=True)
print(json.dumps(records))
"""


def test_debug_filter_delivers_debug_events(two_file_table):
    records = json.loads(run_child(LOGGING_CHILD, two_file_table, "delta_funnel=debug").stdout)
    debug = {r["msg"]: r for r in records if r["level"] == "DEBUG"}
    io = debug["delta_provider_parquet_io_summary"]
    assert io["source_name"] == "t" and io["snapshot_version"] == "1"
    assert io["outcome"] == "success" and io["metrics_available"] == "true"
    assert int(io["parquet_data_file_bytes_received"]) > 0
    assert io["parquet_data_files_opened"] == "2"
    prof = debug["query_execution_profile_terminal"]
    assert prof["scope"] == "preview" and prof["outcome"] == "success" and prof["partial"] == "false"
    assert prof["delta_funnel_row_limit"] == "5" and prof["root_output_rows"] == "2"
    assert int(prof["operator_count"]) >= int(prof["operators_with_metrics"]) > 0
    assert prof["max_elapsed_compute_operator"]
    assert all(r["target"] == "delta_funnel" for r in records)


def test_info_filter_holds_back_debug_events(two_file_table):
    records = json.loads(run_child(LOGGING_CHILD, two_file_table, "delta_funnel=info").stdout)
    assert records and not [r for r in records if r["level"] == "DEBUG"]


def test_guide_tracebox_version_check_works():
    tracebox = files("deltafunnel") / "perfetto" / "delta-funnel-tracebox"
    proc = subprocess.run([str(tracebox), "--version"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert deltafunnel.__version__ in proc.stdout and "in-process" in proc.stdout
    other = subprocess.run([str(tracebox), "--txt", "-c", "config.pbtx"], capture_output=True, text=True, timeout=30)
    assert other.returncode == 2 and "capture-workload" in other.stderr
