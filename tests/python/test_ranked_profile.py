"""Operation-scoped ranked profiles from Python (RankedProfileConfig and the
ranked_profile= argument of Table.preview, Table.write_to_mssql,
Session.write_all and Session.write_all_for_stream_benchmark).

The operation runs under an in-process capture with native CPU sampling;
its HTML report and .dfprofile artifact are then checked with
delta-funnel-perfetto (inspect, drill-down, interactive mode) and by
reading the data the HTML page embeds.
"""

import json
import os
import pathlib
import re
import shutil
import stat
import subprocess
import sys
import threading
import time

import pytest

deltafunnel = pytest.importorskip("deltafunnel")
from deltafunnel import DeltaFunnelError, RankedProfileConfig  # noqa: E402

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]


def perfetto_cli():
    """delta-funnel-perfetto: DF_PERFETTO_CLI, else the one installed with the package, else a build."""
    env = os.environ.get("DF_PERFETTO_CLI")
    if env:
        return env
    from deltafunnel import _perfetto
    path = _perfetto.program_path()
    if path and os.access(path, os.X_OK) and not path.endswith("capture-workload"):
        return path
    builds = sorted(REPO_ROOT.glob("build*/programs/delta-funnel-perfetto/delta-funnel-perfetto"),
                    key=lambda p: p.stat().st_mtime)
    if not builds:
        raise RuntimeError("delta-funnel-perfetto is not installed (pip install .) nor built")
    return str(builds[-1])


def run_cli(*args, stdin=None):
    return subprocess.run([perfetto_cli(), *map(str, args)], input=stdin, capture_output=True, text=True, timeout=120)


def page_data(html_path):
    """The profile data embedded in a report: (strings, semantics, functions)."""
    text = pathlib.Path(html_path).read_text()
    m = re.search(r'<script id="profile-data" type="application/json">(.*?)</script>', text, re.S)
    assert m, "the report embeds its data"
    data = json.loads(m.group(1))
    return data


@pytest.fixture(scope="module")
def table5m(cli, tmp_path_factory):
    """5,000,000 mixed rows in 4 files (the acceptance size)."""
    out = tmp_path_factory.mktemp("ranked") / "t"
    subprocess.run([cli, "datagen", "--output", str(out), "--rows", "5000000", "--files", "4"], check=True,
                   capture_output=True, timeout=600)
    return out


@pytest.fixture(scope="module")
def small_table(cli, tmp_path_factory):
    out = tmp_path_factory.mktemp("ranked_small") / "t"
    subprocess.run([cli, "datagen", "--output", str(out), "--rows", "50000", "--files", "2"], check=True,
                   capture_output=True, timeout=600)
    return out


def full_scan(session, table, name="t"):
    session.delta_lake(str(table), name=name)
    return session.table_from_sql(f"SELECT * FROM {name} WHERE id % 1000003 = 7")


# --------------------------------------------------------------- the config

def test_config_is_validated_frozen_and_shows_its_fields(tmp_path):
    c = RankedProfileConfig("query.profile.html")
    assert repr(c) == ('deltafunnel.RankedProfileConfig(report_path="query.profile.html", sample_hz=1000, '
                       'artifact_path=None, max_operator_activity_spans=100000)')
    assert str(c) == repr(c)
    assert c.report_path == pathlib.Path("query.profile.html") and c.artifact_path is None
    assert c.sample_hz == 1000 and c.max_operator_activity_spans == 100_000
    c2 = RankedProfileConfig(pathlib.Path("a/p.html"), sample_hz=100, artifact_path="a/p.dfprofile",
                             max_operator_activity_spans=7)
    assert repr(c2) == ('deltafunnel.RankedProfileConfig(report_path="a/p.html", sample_hz=100, '
                        'artifact_path="a/p.dfprofile", max_operator_activity_spans=7)')
    for attr in ("report_path", "sample_hz", "artifact_path", "max_operator_activity_spans", "other"):
        with pytest.raises(AttributeError):
            setattr(c, attr, 1)

    def bad(**kw):
        args = kw.pop("args", ("r.html",))
        with pytest.raises(DeltaFunnelError) as e:
            RankedProfileConfig(*args, **kw)
        assert (e.value.phase, e.value.kind) == ("config", "invalid_option_value")
        assert e.value.context is None
        return str(e.value)

    for hz in (99, -1, 0, 1001, True, "1000", 1000.0):
        assert bad(sample_hz=hz) == "`sample_hz` must be 100 or 1000"
    for spans in (0, -1, True, "5", 2 ** 64, 1.5):
        bad(max_operator_activity_spans=spans)
    assert RankedProfileConfig("r.html", max_operator_activity_spans=2 ** 64 - 1).max_operator_activity_spans == 2 ** 64 - 1
    for path in ("", ".", "..", "dir/.."):
        assert bad(args=(path,)) == "`report_path` must name a file"
        assert bad(artifact_path=path) == "`artifact_path` must name a file"
    with pytest.raises(TypeError):
        RankedProfileConfig("r.html", 1000)  # keyword-only
    with pytest.raises(TypeError):
        RankedProfileConfig()


# ----------------------------------------------------------- preview + files

def test_preview_writes_report_and_artifact_that_inspect_explains(table5m, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    s = deltafunnel.Session()
    t = full_scan(s, table5m)
    preview = t.preview(ranked_profile=RankedProfileConfig("out/profile.html", artifact_path="out/p.dfprofile"))
    assert "id" in preview.text
    html, art = tmp_path / "out" / "profile.html", tmp_path / "out" / "p.dfprofile"
    for f in (html, art):
        assert f.is_file() and f.stat().st_size > 0
        assert stat.S_IMODE(f.stat().st_mode) == 0o600
    assert sorted(os.listdir(tmp_path / "out")) == ["p.dfprofile", "profile.html"]  # the raw trace is gone
    text = html.read_text()
    assert text.startswith("<!doctype html>") and "http://" not in text and "https://" not in text

    roots = run_cli("inspect", art)
    assert roots.returncode == 0, roots.stderr
    assert "context: operation-roots" in roots.stdout
    root = re.search(r'^semantic depth=0 id=semantic:(\d+) name="Delta Funnel preview \(operation \d+\)" '
                     r'kind="operation" duration_ns=(\d+)', roots.stdout, re.M)
    assert root, roots.stdout
    assert int(root.group(2)) > 0

    drill = run_cli("inspect", art, "--semantic", root.group(1), "--depth", "2", "--limit", "30")
    assert drill.returncode == 0, drill.stderr
    for name in ("Planning", "Execution", "Finalization", "Execute and collect", "Physical planning"):
        assert f'name="{name}"' in drill.stdout
    execute = re.search(r'id=semantic:(\d+) name="Execute and collect"', drill.stdout)
    assert execute, drill.stdout
    stage = run_cli("inspect", art, "--semantic", execute.group(1), "--sort", "inclusive-cpu", "--limit", "10")
    assert stage.returncode == 0, stage.stderr
    fn = re.search(r"id=function:(\d+):(\d+)", stage.stdout)
    assert fn, "the scan's CPU shows as native functions of Execute and collect:\n" + stage.stdout
    callees = run_cli("inspect", art, "--function", f"{fn.group(1)}:{fn.group(2)}", "--sort", "inclusive-cpu",
                      "--depth", "2")
    assert callees.returncode == 0, callees.stderr
    assert f"context: function:{fn.group(1)}:{fn.group(2)}" in callees.stdout

    script = f"open semantic:{root.group(1)}\nsort inclusive-cpu\nfilter Execute\nclear\nup\nhelp\nquit\n"
    inter = run_cli("inspect", art, "--interactive", stdin=script)
    assert inter.returncode == 0, inter.stderr
    assert inter.stdout.count("-- end --") == 8  # the first view plus seven responses
    assert inter.stdout.rstrip().endswith("-- end --")


def test_full_scan_cpu_lands_in_scan_and_decoding(table5m, tmp_path):
    s = deltafunnel.Session()
    t = full_scan(s, table5m)
    report = tmp_path / "scan.html"
    t.preview(ranked_profile=RankedProfileConfig(report, sample_hz=1000))
    data = page_data(report)
    strings = data["strings"]
    meta = data["metadata"]
    direct = meta["direct_sample_count"]
    assert direct >= 200, meta  # a ~second of CPU at 1000 Hz over the workers
    sems = {row[0]: row for row in data["semantics"]}
    names = {i: strings[row[3]] if row[3] is not None else None for i, row in sems.items()}
    execute = [i for i, n in names.items() if n == "Execute and collect"]
    assert execute, names
    # Samples attributed under Execute and collect: the operation's work happens there.
    inclusive = {row[0]: row[18] for row in data["semantics"]}
    assert inclusive[execute[0]] >= 0.8 * direct, (inclusive[execute[0]], direct)
    # Self samples by function: the hottest frames are the scan's decoding, not the diagnostics.
    self_by_name = {}
    for f in data["functions"]:
        name = strings[f[3]]
        self_by_name[name] = self_by_name.get(name, 0) + f[8]
    total = sum(self_by_name.values())
    scan_words = ("parquet", "decode", "snappy", "delta", "scan", "column", "page", "plain", "filter", "kernel",
                  "memcpy", "memmove", "batch", "dict", "rle", "bitpack", "unpack", "zstd", "LZ4", "crc")
    scan = sum(v for k, v in self_by_name.items() if any(w.lower() in k.lower() for w in scan_words))
    diag = sum(v for k, v in self_by_name.items() if k.startswith(("df__diag", "df_diag", "df_report")))
    top = sorted(self_by_name.items(), key=lambda kv: -kv[1])[:12]
    assert scan >= 0.6 * total, top
    assert diag <= 0.02 * total, top
    assert any(re.search(r"parquet|decode", k, re.I) for k, _ in top[:5]), top


def test_missing_parent_directories_are_created(small_table, tmp_path):
    s = deltafunnel.Session()
    t = full_scan(s, small_table)
    report = tmp_path / "a" / "b" / "c" / "r.html"
    art = tmp_path / "x" / "y" / "r.dfprofile"
    t.preview(ranked_profile=RankedProfileConfig(report, artifact_path=art, sample_hz=100))
    assert report.is_file() and art.is_file()


def test_one_active_ranked_profile_per_process(table5m, tmp_path):
    s = deltafunnel.Session()
    t = full_scan(s, table5m)
    first_dir = tmp_path / "first"
    errors = []

    def run_first():
        try:
            t.preview(ranked_profile=RankedProfileConfig(first_dir / "r.html"))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    th = threading.Thread(target=run_first)
    th.start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(first_dir.glob(".delta-funnel-profile.*")):
        time.sleep(0.005)
    assert any(first_dir.glob(".delta-funnel-profile.*")), "the first profile started"
    with pytest.raises(DeltaFunnelError) as e:
        t.preview(ranked_profile=RankedProfileConfig(tmp_path / "second.html"))
    th.join()
    assert (e.value.phase, e.value.kind) == ("ranked_profile", "profile_already_active")
    assert e.value.context is None
    assert not errors
    assert (first_dir / "r.html").is_file() and not (tmp_path / "second.html").exists()
    # Once finished, the next one runs.
    t.preview(ranked_profile=RankedProfileConfig(tmp_path / "third.html", sample_hz=100))
    assert (tmp_path / "third.html").is_file()


def test_aliasing_outputs_are_rejected_before_anything_is_created(small_table, tmp_path):
    s = deltafunnel.Session()
    t = full_scan(s, small_table)
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    (tmp_path / "real" / "existing.html").write_text("keep")
    os.link(tmp_path / "real" / "existing.html", tmp_path / "real" / "hard.dfprofile")
    cases = [
        (tmp_path / "real" / "p.html", tmp_path / "link" / "p.html"),
        (tmp_path / "real" / "p.html", tmp_path / "real" / "sub" / ".." / "p.html"),
        (tmp_path / "real" / "existing.html", tmp_path / "real" / "hard.dfprofile"),
    ]
    for report, art in cases:
        with pytest.raises(DeltaFunnelError) as e:
            t.preview(ranked_profile=RankedProfileConfig(report, artifact_path=art))
        assert (e.value.phase, e.value.kind) == ("config", "invalid_option_value"), str(e.value)
    assert sorted(os.listdir(tmp_path / "real")) == ["existing.html", "hard.dfprofile"]
    assert (tmp_path / "real" / "existing.html").read_text() == "keep"


def test_outputs_that_are_not_files_are_unavailable(small_table, tmp_path):
    s = deltafunnel.Session()
    t = full_scan(s, small_table)
    (tmp_path / "dir.html").mkdir()
    with pytest.raises(DeltaFunnelError) as e:
        t.preview(ranked_profile=RankedProfileConfig(tmp_path / "dir.html"))
    assert (e.value.phase, e.value.kind) == ("ranked_profile", "output_unavailable")
    (tmp_path / "file").write_text("x")
    with pytest.raises(DeltaFunnelError) as e:
        t.preview(ranked_profile=RankedProfileConfig(tmp_path / "file" / "r.html"))
    assert (e.value.phase, e.value.kind) == ("ranked_profile", "output_unavailable")
    with pytest.raises(TypeError):
        t.preview(ranked_profile=str(tmp_path / "r.html"))


def test_the_operation_error_stays_primary(small_table, tmp_path):
    s = deltafunnel.Session()
    s.delta_lake(str(small_table), name="t")
    bad = s.table_from_sql("SELECT 1 / (id - id) AS x FROM t")
    with pytest.raises(DeltaFunnelError) as e:
        bad.preview(ranked_profile=RankedProfileConfig(tmp_path / "failed.html", sample_hz=100))
    assert (e.value.phase, e.value.kind) == ("preview", "preview_failed")
    assert not hasattr(e.value, "deltafunnel_operation_status")
    # The failed operation was still profiled: its report shows the error.
    assert (tmp_path / "failed.html").is_file()
    roots = [r for r in page_data(tmp_path / "failed.html")["semantics"] if r[1] is None]
    assert roots


def test_report_failure_after_a_completed_operation_is_marked_completed(table5m, tmp_path):
    """The report's directory disappears while the operation runs: the operation completed, the report
    did not, and the error says so (so nobody retries a completed write)."""
    s = deltafunnel.Session()
    t = full_scan(s, table5m)
    out = tmp_path / "out"
    result = {}

    def run():
        try:
            result["preview"] = t.preview(ranked_profile=RankedProfileConfig(out / "r.html"))
        except DeltaFunnelError as e:
            result["error"] = e

    th = threading.Thread(target=run)
    th.start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(out.glob(".delta-funnel-profile.*")):
        time.sleep(0.002)
    os.rename(out, tmp_path / "moved")
    out.write_text("not a directory any more")
    th.join()
    e = result.get("error")
    assert e is not None, "the report could not be written"
    assert e.phase == "ranked_profile"
    assert e.deltafunnel_operation_status == "completed"
    assert not hasattr(e, "deltafunnel_operation_report")  # previews carry the status only


def test_dry_runs_reject_ranked_profiles(small_table, tmp_path):
    s = deltafunnel.Session(default_mssql_connection_string="server=tcp:127.0.0.1,1;user id=u;password=p")
    t = full_scan(s, small_table)
    cfg = RankedProfileConfig(tmp_path / "r.html")
    with pytest.raises(DeltaFunnelError) as e:
        t.write_to_mssql(schema="dbo", table="x", load_mode="replace", dry_run=True, ranked_profile=cfg)
    assert (e.value.phase, e.value.kind) == ("config", "invalid_option_value")
    assert str(e.value) == "profiling is only supported for execute `write_to_mssql` calls"
    o = t.to_mssql(schema="dbo", table="x", load_mode="replace")
    with pytest.raises(DeltaFunnelError) as e:
        s.write_all([o], dry_run=True, ranked_profile=cfg)
    assert str(e.value) == "profiling is only supported for execute `write_all` calls"
    assert not (tmp_path / "r.html").exists()


def test_stream_benchmark_profile_has_the_write_all_root(small_table, tmp_path):
    s = deltafunnel.Session(default_mssql_connection_string="server=tcp:127.0.0.1,1;user id=u;password=p")
    s.delta_lake(str(small_table), name="t")
    t = s.table_from_sql("SELECT id, quantity FROM t WHERE id % 3 = 1")
    o = t.to_mssql(schema="dbo", table="bench", load_mode="replace")
    report = s.write_all_for_stream_benchmark([o], ranked_profile=RankedProfileConfig(
        tmp_path / "wa.html", artifact_path=tmp_path / "wa.dfprofile", sample_hz=100))
    assert report["all_succeeded"] is True
    roots = run_cli("inspect", tmp_path / "wa.dfprofile")
    assert 'name="Delta Funnel SQL Server write_all (operation' in roots.stdout, roots.stdout


def test_write_to_mssql_profile_shows_the_output_owner(small_table, tmp_path):
    mssql_peer = pytest.importorskip("mssql_peer")
    try:
        peer = mssql_peer.Peer()
    except RuntimeError as e:
        pytest.skip(str(e))
    with peer:
        s = deltafunnel.Session(default_mssql_connection_string=peer.conn_str())
        s.delta_lake(str(small_table), name="t")
        t = s.table_from_sql("SELECT id, quantity FROM t")
        rep = t.write_to_mssql(schema="dbo", table="target", load_mode="create_and_load", ranked_profile=
                               RankedProfileConfig(tmp_path / "w.html", artifact_path=tmp_path / "w.dfprofile",
                                                   sample_hz=100))
        assert rep["write_stats"]["rows_written"] == 50000
    roots = run_cli("inspect", tmp_path / "w.dfprofile")
    root = re.search(r'id=semantic:(\d+) name="Delta Funnel SQL Server write \(operation', roots.stdout)
    assert root, roots.stdout
    drill = run_cli("inspect", tmp_path / "w.dfprofile", "--semantic", root.group(1), "--depth", "3",
                    "--limit", "60")
    for stage in ("Connect to SQL Server", "Stream and write batches", "Finalize SQL Server writer"):
        assert f'name="{stage}"' in drill.stdout, drill.stdout


def test_timer_sampler_forced_still_profiles(small_table, tmp_path):
    """DELTAFUNNEL_PROFILE_SAMPLER forces backend B (CPU-time timers + in-process unwinding)."""
    code = (
        "import sys, deltafunnel\n"
        "s = deltafunnel.Session()\n"
        f"s.delta_lake({str(small_table)!r}, name='t')\n"
        "t = s.table_from_sql('SELECT * FROM t WHERE id % 7 = 3')\n"
        f"t.preview(ranked_profile=deltafunnel.RankedProfileConfig({str(tmp_path / 'timer.html')!r}))\n"
    )
    env = dict(os.environ, DELTAFUNNEL_PROFILE_SAMPLER="thread_cpu_timer")
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=300)
    data = page_data(tmp_path / "timer.html")
    assert data["metadata"]["direct_sample_count"] > 0
    depths = [f for f in data["functions"] if f[2] is not None]
    assert depths, "backend B samples carry multi-frame stacks"
