"""Only regular files are read as table data or log files, and a table
location that cannot be opened says why.

A FIFO where a Parquet data file or a `_delta_log` commit belongs used to
block the reader forever (opening a FIFO for reading waits for a writer).
Every operation runs in a child process with a timeout, so a regression
fails here instead of hanging the test run."""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

pa = pytest.importorskip("pyarrow")

TIMEOUT = 60

# The child prints the DeltaFunnelError it got (or "ok") as one JSON line.
CHILD = textwrap.dedent("""
    import json, sys
    import deltafunnel
    path, what = sys.argv[1], sys.argv[2]
    s = deltafunnel.Session()
    try:
        if what == "delta_lake":
            s.delta_lake(path, name="t")
        else:
            t = s.delta_lake(path, name="t")
            if what == "preview":
                t.preview()
            elif what == "to_arrow":
                t.to_arrow()
            else:
                raise SystemExit("unknown operation " + what)
        print(json.dumps({"ok": True}))
    except deltafunnel.DeltaFunnelError as e:
        print(json.dumps({"ok": False, "phase": e.phase, "kind": e.kind, "message": e.message,
                          "context": e.context}, default=str))
""")


def run_child(path, what):
    proc = subprocess.run([sys.executable, "-c", CHILD, str(path), what], capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture()
def two_commit_table(tmp_path):
    deltalake = pytest.importorskip("deltalake")
    path = tmp_path / "t"
    deltalake.write_deltalake(str(path), pa.table({"id": pa.array([1, 2], pa.int64())}))
    deltalake.write_deltalake(str(path), pa.table({"id": pa.array([3], pa.int64())}), mode="append")
    return path


def replace_with_fifo(path):
    os.remove(path)
    os.mkfifo(path)


def data_files(table):
    return sorted(p for p in table.iterdir() if p.suffix == ".parquet")


def all_text(result):
    return result["message"] + " " + json.dumps(result.get("context"))


@pytest.mark.parametrize("what", ["preview", "to_arrow"])
def test_a_fifo_in_place_of_a_data_file_is_refused(two_commit_table, what):
    assert run_child(two_commit_table, what) == {"ok": True}
    replace_with_fifo(data_files(two_commit_table)[0])
    result = run_child(two_commit_table, what)
    assert result["ok"] is False, result
    assert "not a regular file" in all_text(result) and "FIFO" in all_text(result), result


@pytest.mark.parametrize("commit", ["00000000000000000000.json", "00000000000000000001.json"])
def test_a_fifo_in_place_of_a_commit_is_refused(two_commit_table, commit):
    replace_with_fifo(two_commit_table / "_delta_log" / commit)
    result = run_child(two_commit_table, "delta_lake")
    assert result["ok"] is False, result
    assert (result["phase"], result["kind"]) == ("delta_source", "delta_snapshot_load"), result
    assert "not a regular file" in all_text(result) and "FIFO" in all_text(result), result


def test_a_fifo_checkpoint_is_refused(tmp_path, two_commit_table):
    # A FIFO named like a checkpoint is refused when the log is listed, before anything reads it.
    os.mkfifo(two_commit_table / "_delta_log" / "00000000000000000001.checkpoint.parquet")
    result = run_child(two_commit_table, "delta_lake")
    assert result["ok"] is False, result
    assert "not a regular file" in all_text(result), result


def test_a_directory_in_place_of_a_data_file_is_refused(two_commit_table):
    f = data_files(two_commit_table)[0]
    os.remove(f)
    os.mkdir(f)
    result = run_child(two_commit_table, "to_arrow")
    assert result["ok"] is False, result
    assert "directory" in all_text(result), result


def test_a_fifo_job_file_is_refused(cli, tmp_path):
    job = tmp_path / "job.toml"
    os.mkfifo(job)
    proc = subprocess.run([cli, "load", str(job), "--dry-run"], capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode != 0
    assert "not a regular file" in proc.stderr, proc.stderr


# ---- table locations that cannot be resolved -------------------------------------------------


def location_error(path):
    import deltafunnel
    with pytest.raises(deltafunnel.DeltaFunnelError) as info:
        deltafunnel.Session().delta_lake(str(path), name="t")
    err = info.value
    assert (err.phase, err.kind) == ("source_config", "invalid_source_uri"), (err.phase, err.kind, err.message)
    return err


def test_a_missing_location_says_it_does_not_exist(tmp_path):
    missing = tmp_path / "missing" / "t"
    err = location_error(missing)
    assert err.message == f"invalid Delta source URI: table location `{missing}` does not exist"
    assert err.context == {"cause_kind": "location_not_found", "errno": 2}
    # Through a regular file (ENOTDIR) it does not exist either; a file: URI names the decoded path.
    (tmp_path / "f").write_text("x")
    err = location_error(f"file://{tmp_path}/f/t")
    assert err.message == f"invalid Delta source URI: table location `{tmp_path}/f/t` does not exist"
    assert err.context["cause_kind"] == "location_not_found"


def test_a_symlink_loop_is_named(tmp_path):
    os.symlink(tmp_path / "b", tmp_path / "a")
    os.symlink(tmp_path / "a", tmp_path / "b")
    err = location_error(tmp_path / "a")
    assert err.message == f"invalid Delta source URI: table location `{tmp_path / 'a'}` is a symlink loop"
    assert err.context["cause_kind"] == "location_symlink_loop"


@pytest.mark.skipif(os.geteuid() == 0, reason="root searches every directory regardless of its permissions")
def test_a_location_behind_a_locked_directory_says_permission_denied(tmp_path):
    locked = tmp_path / "locked"
    (locked / "t").mkdir(parents=True)
    locked.chmod(0)
    try:
        err = location_error(locked / "t")
    finally:
        locked.chmod(0o700)
    assert err.message == (f"invalid Delta source URI: table location `{locked / 't'}` cannot be reached: "
                           "permission denied")
    assert err.context["cause_kind"] == "location_permission_denied"
