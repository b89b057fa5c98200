"""Previews over every Delta table of the shared conformance corpus
(../shared/testdata/delta): each table either previews — a well-formed grid
with min(5, rows) rows, rows as counted by SQL — or fails with a
DeltaFunnelError of a stable (phase, kind); nothing else may escape."""

import glob
import os
import pathlib

import pytest

import deltafunnel
from deltafunnel import DeltaFunnelError

ALLOWED_FAILURES = {
    ("delta_source", "delta_snapshot_load"),
    ("delta_source", "delta_source_schema"),
    ("delta_protocol", "delta_protocol_compatibility"),
    ("preview", "preview_failed"),
}


def _tables():
    repo_root = pathlib.Path(__file__).resolve().parents[2]
    root = os.environ.get("DF_SHARED_TESTDATA") or str(repo_root.parent / "shared" / "testdata")
    return sorted(os.path.dirname(p) for p in glob.glob(os.path.join(root, "delta", "*", "*", "delta")))


TABLES = _tables()


def _grid_rows(text):
    if text == "++\n++":
        return 0
    lines = text.split("\n")
    return sum(1 for line in lines[3:-1] if line.startswith("|"))


@pytest.mark.parametrize("table", TABLES or [None], ids=lambda t: "/".join(t.split(os.sep)[-2:]) if t else "none")
def test_every_shared_table_previews_or_fails_cleanly(table):
    if table is None:
        pytest.skip("shared conformance data (../shared/testdata/delta) is not present in this checkout")
    session = deltafunnel.Session()
    try:
        t = session.delta_lake(os.path.join(table, "delta"), name="t")
        p = t.preview(5)
    except DeltaFunnelError as err:
        assert (err.phase, err.kind) in ALLOWED_FAILURES, (err.phase, err.kind, err.message)
        assert "\n" not in err.message
        return
    lines = p.text.split("\n")
    assert p.text == "++\n++" or (lines[0].startswith("+-") and lines[2].startswith("+-") and lines[-1] == lines[0])
    count = session.table_from_sql("SELECT count(*) AS n FROM t").to_arrow().column(0)[0].as_py()
    shown = _grid_rows(p.text)
    assert shown <= 5
    if not any("\n" in str(v) for v in t.to_arrow().slice(0, 5).to_pylist()):
        assert shown == min(5, count)
    assert f"Showing <b>{min(5, count)}</b> rows" in p.html
    assert [e["status"]["kind"] for e in p.phase_timings] == ["completed"] * 7
