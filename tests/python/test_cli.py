"""The deltafunnel program: preview, datagen, help and version, error lines
and exit codes."""

import json
import subprocess

import pytest

import deltafunnel


def run(cli, *args, timeout=300):
    return subprocess.run([cli, *map(str, args)], capture_output=True, text=True, timeout=timeout)


def test_version_and_help(cli):
    proc = run(cli, "--version")
    assert proc.returncode == 0
    assert proc.stdout == f"deltafunnel {deltafunnel.__version__}\n"
    proc = run(cli, "--help")
    assert proc.returncode == 0 and "preview" in proc.stdout and "datagen" in proc.stdout
    for cmd in ["preview", "datagen"]:
        proc = run(cli, cmd, "--help")
        assert proc.returncode == 0 and proc.stdout.startswith(f"usage: deltafunnel {cmd}")
        assert run(cli, "help", cmd).stdout == proc.stdout


def test_usage_errors_exit_2(cli):
    for args in [[], ["frobnicate"], ["preview"], ["preview", "--source", "noequals"],
                 ["preview", "--source", "a=/x", "--limit", "-3"], ["datagen", "--rows", "5"],
                 ["datagen", "--output", "/tmp/x", "--rows", "5", "--codec", "lzma"]]:
        proc = run(cli, *args)
        assert proc.returncode == 2, args
        assert proc.stdout == "" or args == []


def test_preview_prints_grid_and_timings(cli, mixed_table):
    proc = run(cli, "preview", "--source", f"orders={mixed_table}",
               "--sql", "SELECT id, status FROM orders WHERE id < 3 ORDER BY id")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.split("\n")
    assert lines[0].startswith("+----")
    assert [c.strip() for c in lines[1].split("|")[1:-1]] == ["id", "status"]
    assert [int(line.split("|")[1]) for line in lines[3:6]] == [0, 1, 2]
    assert "phase timings:" in proc.stdout
    for phase in ["preview_dataframe_planning", "preview_execute_collect", "preview_total"]:
        assert phase in proc.stdout
    assert proc.stderr == ""


def test_preview_of_a_single_source_and_profile(cli, mixed_table):
    proc = run(cli, "preview", "--source", f"orders={mixed_table}", "--limit", "3", "--profile")
    assert proc.returncode == 0, proc.stderr
    profile = json.loads(proc.stdout.split("execution profile:\n", 1)[1])
    assert profile["scope"] == "preview" and profile["delta_funnel_row_limit"] == 3


def test_errors_are_one_line_with_phase_and_kind(cli, mixed_table, tmp_path):
    proc = run(cli, "preview", "--source", f"orders={mixed_table}", "--sql", "SELECT nope FROM orders")
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: sql_table/sql_table: SQL table error during SQL planning: ")
    assert proc.stderr.count("\n") == 1
    proc = run(cli, "preview", "--source", f"e={tmp_path}")
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: delta_source/delta_snapshot_load: ")
    proc = run(cli, "preview", "--source", "select=/tmp")
    assert proc.returncode == 1 and proc.stderr.startswith("error: source_config/invalid_source_name: ")
    proc = run(cli, "preview", "--source", "x=/definitely/not/here")
    assert proc.stderr.startswith("error: source_config/invalid_source_uri: ")


def test_datagen_is_deterministic(cli, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for path in (a, b):
        proc = run(cli, "datagen", "--output", path, "--rows", 2000, "--partitions", 2, "--files", 2,
                   "--seed", 7, "--codec", "zstd", "--shape", "wide")
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith("wrote 2000 rows in 4 files")
    files_a = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert files_a == files_b and len(files_a) == 5
    for rel in files_a:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel
    proc = run(cli, "datagen", "--output", a, "--rows", 10)
    assert proc.returncode == 1 and "already holds a Delta table" in proc.stderr


@pytest.mark.parametrize("shape", ["mixed", "narrow", "wide", "events"])
def test_datagen_tables_read_back_with_deltalake(cli, tmp_path, shape):
    deltalake = pytest.importorskip("deltalake")
    pa = pytest.importorskip("pyarrow")
    path = tmp_path / shape
    proc = run(cli, "datagen", "--output", path, "--rows", 1234, "--partitions", 3, "--shape", shape,
               "--codec", "snappy")
    assert proc.returncode == 0, proc.stderr
    dt = deltalake.DeltaTable(str(path))
    assert dt.version() == 0
    data = dt.to_pyarrow_table()
    assert data.num_rows == 1234
    key = "event_id" if shape == "events" else "id"
    assert sorted(data.column(key).to_pylist()) == list(range(1234))
    assert len(dt.file_uris()) == 3
    add_actions = pa.table(dt.get_add_actions(flatten=True)).to_pydict()
    assert sum(add_actions["num_records"]) == 1234


def _peak_rss_of(argv):
    """Runs argv and returns (exit code, stderr, peak RSS in bytes).

    The peak is VmHWM of the exec'ed program, sampled while it runs: the
    rusage of a child also counts the memory of the (large) pytest process
    it was forked from, which would make the bound meaningless."""
    import time
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak_kb = 0
    status_path = f"/proc/{proc.pid}/status"
    while proc.poll() is None:
        try:
            with open(status_path) as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peak_kb = max(peak_kb, int(line.split()[1]))
        except (FileNotFoundError, ProcessLookupError, ValueError):
            pass
        time.sleep(0.02)
    return proc.returncode, proc.stderr.read(), peak_kb * 1024


def test_datagen_streams_in_bounded_memory(cli, tmp_path):
    """Two million mixed rows must not need memory in proportion to the table."""
    code, stderr, peak_bytes = _peak_rss_of([cli, "datagen", "--output", str(tmp_path / "t"), "--rows", "2000000"])
    assert code == 0, stderr
    data_bytes = sum(p.stat().st_size for p in (tmp_path / "t").glob("*.parquet"))
    assert data_bytes > 50 * 2**20
    assert 0 < peak_bytes < 256 * 2**20, peak_bytes