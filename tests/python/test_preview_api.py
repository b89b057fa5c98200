"""Table.preview / Table.show: the Preview object, phase timings, execution
profiles, failures, progress, and the LIMIT acceptance check on a
10-million-row table."""

import re
import subprocess
import sys
import time

import pytest

import deltafunnel
from deltafunnel import DeltaFunnelError

PHASES = ["preview_dataframe_planning", "preview_physical_planning", "preview_stream_setup",
          "preview_execute_collect", "preview_format_text", "preview_format_html", "preview_total"]

DEMO_TEXT = """\
+----+--------+--------+------------+-----------------------------+-------+------+--------+
| id | name   | amount | d          | ts                          | flag  | f    | bin    |
+----+--------+--------+------------+-----------------------------+-------+------+--------+
| 1  | a      | 1.50   | 2024-01-02 | 2024-01-02T03:04:05.123456Z | true  | 1.5  | 00ff   |
| 2  | b<&>"' | -20.05 |            |                             | false |      |        |
| 3  |        |        | 1969-12-31 | 1969-12-31T23:59:59.000001Z |       | NaN  |        |
|    | ünï    | 0.00   | 2000-02-29 | 2000-02-29T00:00:00Z        | true  | 1e20 | 616263 |
+----+--------+--------+------------+-----------------------------+-------+------+--------+"""


def test_table_preview_returns_limited_preview_object(session, demo_table):
    t = session.delta_lake(str(demo_table), name="orders")
    p = t.preview()
    assert isinstance(p, deltafunnel.Preview)
    assert p.text == DEMO_TEXT
    assert str(p) == repr(p) == p.text
    assert p._repr_html_() == p.html
    assert p.execution_profile is None
    assert [e["phase_name"] for e in p.phase_timings] == PHASES
    for entry in p.phase_timings:
        assert set(entry) == {"phase_name", "status", "elapsed_micros"}
        assert entry["status"] == {"kind": "completed", "reason": None}
        assert isinstance(entry["elapsed_micros"], int) and entry["elapsed_micros"] >= 0
    two = t.preview(2)
    assert two.text.count("\n") == 5
    assert "1969" not in two.text
    for attr in ["text", "html", "phase_timings", "execution_profile"]:
        with pytest.raises(AttributeError):
            setattr(p, attr, None)


def test_preview_html_follows_the_contract(session, demo_table):
    p = session.delta_lake(str(demo_table), name="orders").preview()
    html = p.html
    assert html.startswith('<div class="deltafunnel-preview"><style>')
    assert '<th class="df-num"><span>id</span><br><span class="df-type">Int64</span></th>' in html
    assert '<th><span>name</span><br><span class="df-type">Utf8</span></th>' in html
    assert '<span class="df-type">Decimal128(10, 2)</span>' in html
    assert "<td>b&lt;&amp;&gt;&quot;&#39;</td>" in html
    assert '<td class="df-num">null</td>' in html
    assert html.endswith('<div class="df-footer">Showing <b>4</b> rows, <b>8</b> columns.</div></div>')


def test_empty_results_print_an_empty_frame(session, demo_table):
    session.delta_lake(str(demo_table), name="orders")
    p = session.table_from_sql("SELECT id FROM orders WHERE id > 100").preview()
    assert p.text == "++\n++"
    assert "Showing <b>0</b> rows, <b>1</b> columns." in p.html
    assert session.table_from_sql("SELECT id FROM orders").preview(0).text == "++\n++"


def test_preview_limit_binding_rules(session, demo_table):
    t = session.delta_lake(str(demo_table), name="orders")
    with pytest.raises(OverflowError):
        t.preview(-1)
    with pytest.raises(OverflowError):
        t.preview(2**70)
    with pytest.raises(TypeError):
        t.preview("1")
    assert t.preview(True).text.count("\n") == 4


def test_preview_progress_arguments_are_validated_before_adapter_creation(session, demo_table, capsys, tmp_path):
    t = session.delta_lake(str(demo_table), name="orders")
    with pytest.raises(TypeError, match="'str' object is not an instance of 'bool'"):
        t.preview(progress="always")
    with pytest.raises(TypeError, match="'int' object is not an instance of 'bool'"):
        t.preview(execution_profile=1)
    with pytest.raises(TypeError, match="'NoneType' object is not an instance of 'bool'"):
        t.preview(execution_profile=None)
    with pytest.raises(TypeError, match="'int' object is not an instance of 'RankedProfileConfig'"):
        t.preview(ranked_profile=1)
    # A valid config profiles the preview and writes the report, printing nothing.
    report = tmp_path / "deep" / "profile.html"
    t.preview(ranked_profile=deltafunnel.RankedProfileConfig(str(report)))
    assert report.is_file() and report.stat().st_size > 0
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""


def test_progress_is_silent_unless_forced(session, demo_table, capsys):
    t = session.delta_lake(str(demo_table), name="orders")
    t.preview(progress=None)
    t.preview(progress=False)
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""
    t.preview(progress=True)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "Previewing table" in captured.err and "Completed" in captured.err


def test_detailed_table_preview_returns_an_execution_profile(session, demo_table):
    t = session.delta_lake(str(demo_table), name="orders")
    profile = t.preview(3, execution_profile=True).execution_profile
    assert profile["scope"] == "preview"
    assert profile["outcome"] == "success"
    assert profile["partial"] is False
    assert profile["delta_funnel_row_limit"] == 3
    assert profile["operators"] and profile["operators"][0]["node_id"] == 0
    assert profile["operators"][0]["parent_node_id"] is None
    for op in profile["operators"]:
        assert {"node_id", "parent_node_id", "operator_name", "output_partition_count", "metrics_available",
                "aggregated_metrics", "metrics", "delta_provider_read_stats"} <= set(op)


def test_preview_failure_exposes_structured_python_context(session):
    t = session.table_from_sql("SELECT CAST(1 AS BIGINT) / CAST(0 AS BIGINT) AS x")
    for profile in [False, True]:
        with pytest.raises(DeltaFunnelError) as info:
            t.preview(execution_profile=profile)
        err = info.value
        assert (err.phase, err.kind) == ("preview", "preview_failed")
        assert err.message.startswith("preview failed during preview_execute_collect: ")
        ctx = err.context
        assert set(ctx) == {"failed_phase", "phase_timings", "execution_profile"}
        assert ctx["failed_phase"] == "preview_execute_collect"
        timings = {e["phase_name"]: e for e in ctx["phase_timings"]}
        assert list(timings) == PHASES
        assert timings["preview_dataframe_planning"]["status"]["kind"] == "completed"
        assert timings["preview_execute_collect"]["status"] == {"kind": "failed", "reason": None}
        assert timings["preview_format_text"]["status"] == {"kind": "not_started", "reason": "prior_failure"}
        assert timings["preview_format_text"]["elapsed_micros"] is None
        assert timings["preview_total"]["status"]["kind"] == "failed"
        if profile:
            assert ctx["execution_profile"]["outcome"] == "error"
            assert ctx["execution_profile"]["partial"] is True
        else:
            assert ctx["execution_profile"] is None


def test_table_show_prints_preview_to_python_stdout(session, demo_table, capsys):
    t = session.delta_lake(str(demo_table), name="orders")
    assert t.show(2) is None
    captured = capsys.readouterr()
    assert captured.out == t.preview(2).text + "\n"
    assert captured.err == ""


def test_show_output_goes_to_stdout_only_in_a_fresh_interpreter(demo_table):
    code = ("import deltafunnel\n"
            f"t = deltafunnel.Session().delta_lake({str(demo_table)!r}, name='o')\n"
            "t.show(1)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("+----+") and proc.stderr == ""


def test_reference_quickstart_flow_on_a_datagen_table(session, mixed_table):
    orders = session.delta_lake(str(mixed_table), name="orders")
    big = session.table_from_sql(
        "SELECT id, customer_id, amount, status FROM orders WHERE amount > 1000 ORDER BY id").alias("big_orders")
    p = big.preview(5)
    lines = p.text.split("\n")
    assert [cell.strip() for cell in lines[1].split("|")[1:-1]] == ["id", "customer_id", "amount", "status"]
    assert len(lines) == 5 + 4
    ids = [int(line.split("|")[1]) for line in lines[3:-1]]
    assert ids == sorted(ids)
    summary = session.table_from_sql("SELECT status, count(*) AS n FROM big_orders GROUP BY status ORDER BY status")
    text = summary.preview().text
    assert "delivered" in text and "pending" in text
    assert orders.preview(1).text.startswith("+")


def test_limit_preview_reads_only_the_row_groups_it_needs(session, big_table):
    """LIMIT 20 over 10M rows: the scan counters prove that one row group of
    one file was decoded, not the table."""
    t = session.delta_lake(str(big_table), name="big")
    start = time.monotonic()
    p = t.preview(20, execution_profile=True)
    elapsed = time.monotonic() - start
    assert p.text.count("\n") == 20 + 3
    stats = [op["delta_provider_read_stats"] for op in p.execution_profile["operators"]
             if op["delta_provider_read_stats"] is not None]
    assert len(stats) == 1
    s = stats[0]
    assert s["files_planned"] == 1
    assert s["row_groups_read"] == 1, s
    assert s["pages_read"] <= 3 * 4, s
    assert s["rows_produced"] < 131072 * 2, s
    assert elapsed < 30
