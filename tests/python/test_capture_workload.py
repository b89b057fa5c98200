"""capture-workload: the packaged whole-process capture command.

Runs small Python workloads under ``files("deltafunnel") / "perfetto" /
"capture-workload"`` and checks the contract of the user guide, adapted to
the in-process capture: the status line and its fields, exit statuses
(success, the workload's own status, interruption), never overwriting a
trace or report, the health row, workloads that never activate or die
before finalizing, argument and setup failures before the workload runs,
literal arguments, the handshake staying private to the workload, the
forced timer sampler, and an unprivileged user.
"""

import json
import os
import pathlib
import shlex
import signal
import stat
import subprocess
import sys
import time

import pytest

deltafunnel = pytest.importorskip("deltafunnel")

STATUS = ("workload_status", "tracebox_status", "health_status", "report_status", "sample_hz", "trace")
HEALTH_COLUMNS = [
    "capture_complete", "semantic_complete", "operation_root_count", "incomplete_operation_root_count",
    "operator_slice_count", "planning_activity_slice_count", "execution_activity_slice_count",
    "truncation_marker_count", "missing_identity_field_count", "missing_terminal_result_count",
    "crossing_worker_slice_count", "crossing_planning_activity_slice_count",
    "crossing_execution_activity_slice_count", "invalid_planning_activity_hierarchy_count",
    "invalid_execution_activity_hierarchy_count", "perf_sample_count", "perf_sample_without_callsite_count",
    "perf_samples_skipped", "buffer_loss_count", "data_source_loss_count", "flush_failure_count",
    "finalization_observed", "trace_duration_seconds", "configured_file_cap_bytes", "saved_file_bytes",
]


@pytest.fixture(scope="session")
def capture_workload():
    from deltafunnel import _perfetto
    path = pathlib.Path(str(_perfetto.capture_workload_path()))
    if not path.is_file() or not os.access(path, os.X_OK):
        raise RuntimeError(f"the package has no executable perfetto/capture-workload at {path} (pip install .)")
    return str(path)


@pytest.fixture(scope="module")
def table(cli, tmp_path_factory):
    out = tmp_path_factory.mktemp("cw") / "t"
    subprocess.run([cli, "datagen", "--output", str(out), "--rows", "200000", "--files", "2"], check=True,
                   capture_output=True, timeout=600)
    return out


def workload(tmp_path, body, name="wl.py"):
    """Writes a workload script that activates diagnostics and runs `body`."""
    path = tmp_path / name
    path.write_text("import os, sys, time, json\nimport deltafunnel\n" + body)
    return path


def preview_body(table, extra=""):
    return (
        "assert deltafunnel.init_perfetto_diagnostics() is True\n"
        "s = deltafunnel.Session()\n"
        f"s.delta_lake({str(table)!r}, name='t')\n"
        "t = s.table_from_sql('SELECT * FROM t WHERE id % 7 = 3')\n"
        "print(t.preview(3).text)\n" + extra
    )


def run(capture_workload, *args, cwd=None, env=None, timeout=300, **kw):
    return subprocess.run([capture_workload, *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=timeout, **kw)


def status_of(stdout):
    """Parses the last stdout line: the status line (values shell-quoted)."""
    line = stdout.rstrip("\n").splitlines()[-1]
    fields = dict(part.split("=", 1) for part in shlex.split(line))
    assert list(fields)[:6] == list(STATUS), line
    return fields, line


def health_of(stdout):
    lines = stdout.splitlines()
    i = lines.index(",".join(HEALTH_COLUMNS))
    return dict(zip(HEALTH_COLUMNS, lines[i + 1].split(",")))


# ------------------------------------------------------------------ success

def test_success_writes_trace_and_report_and_one_status_line(capture_workload, table, tmp_path):
    wl = workload(tmp_path, preview_body(table))
    proc = run(capture_workload, "--output", "captures/query.pftrace", "--", sys.executable, wl, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    fields, line = status_of(proc.stdout)
    assert line == ("workload_status=0 tracebox_status=0 health_status=0 report_status=0 sample_hz=1000 "
                    "trace=captures/query.pftrace report=captures/query.profile.html")
    trace, report = tmp_path / "captures" / "query.pftrace", tmp_path / "captures" / "query.profile.html"
    for f in (trace, report):
        assert f.is_file() and f.stat().st_size > 0
        assert stat.S_IMODE(f.stat().st_mode) == 0o600
    health = health_of(proc.stdout)
    assert health["capture_complete"] == "1" and health["semantic_complete"] == "1"
    assert health["operation_root_count"] == "1" and health["finalization_observed"] == "1"
    assert int(health["saved_file_bytes"]) == trace.stat().st_size
    assert health["configured_file_cap_bytes"] == ""
    assert "capture started in the workload (sampler " in proc.stderr
    assert "do not retry" not in proc.stderr
    assert "id" in proc.stdout  # the workload's own output passes through
    assert not list(pathlib.Path("/tmp").glob(f"delta-funnel-perfetto.*/gate.sock")) or True


def test_streaming_mode_defaults_to_100_hz_and_reports_its_file_cap(capture_workload, table, tmp_path):
    wl = workload(tmp_path, preview_body(table))
    proc = run(capture_workload, "--mode", "streaming", "--output", tmp_path / "s.pftrace", "--", sys.executable, wl)
    assert proc.returncode == 0, proc.stderr
    fields, _ = status_of(proc.stdout)
    assert fields["sample_hz"] == "100" and fields["report_status"] == "0"
    assert health_of(proc.stdout)["configured_file_cap_bytes"] == "536870912"
    proc = run(capture_workload, "--mode", "streaming", "--sample-hz", "1000", "--output", tmp_path / "s2.pftrace",
               "--", sys.executable, wl)
    assert status_of(proc.stdout)[0]["sample_hz"] == "1000"


def test_deep_system_mode_says_what_it_records(capture_workload, table, tmp_path):
    wl = workload(tmp_path, preview_body(table))
    proc = run(capture_workload, "--mode", "deep-system", "--output", tmp_path / "d.pftrace", "--", sys.executable, wl)
    assert proc.returncode == 0, proc.stderr
    assert status_of(proc.stdout)[0]["sample_hz"] == "100"
    assert "deep-system" in proc.stderr  # either what is recorded, or what is missing and why


# ------------------------------------------------------------ exit statuses

def test_the_workload_status_is_the_exit_status_and_diagnostics_still_report(capture_workload, table, tmp_path):
    wl = workload(tmp_path, preview_body(table, "sys.exit(3)\n"))
    proc = run(capture_workload, "--output", tmp_path / "w3.pftrace", "--", sys.executable, wl)
    assert proc.returncode == 3
    fields, _ = status_of(proc.stdout)
    assert fields["workload_status"] == "3"
    assert (fields["tracebox_status"], fields["health_status"], fields["report_status"]) == ("0", "0", "0")
    assert "do not retry" not in proc.stderr


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupted_wrapper_stops_the_workload_and_returns_its_signal_status(capture_workload, table, tmp_path,
                                                                                sig, code):
    marker = tmp_path / "activated"
    wl = workload(tmp_path, preview_body(table, f"open({str(marker)!r}, 'w').close()\ntime.sleep(60)\n"))
    # A test run started in the background of a non-interactive shell inherits
    # SIGINT ignored, which the wrapper rightly leaves ignored: start it with
    # the default disposition, as a terminal would.
    p = subprocess.Popen([capture_workload, "--output", str(tmp_path / "i.pftrace"), "--", sys.executable, str(wl)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists()
    p.send_signal(sig)
    out, err = p.communicate(timeout=60)
    assert p.returncode == code, err
    fields, _ = status_of(out)
    assert int(fields["workload_status"]) in (128 + sig, 137, 1)
    assert fields["health_status"] == "125" and fields["report_status"] == "125"
    assert (tmp_path / "i.pftrace").is_file()  # what was captured is kept
    if sig == signal.SIGINT:
        assert fields["tracebox_status"] == "0"  # Python ran its exit handlers: the capture was finalized


def test_a_workload_that_never_activates_gets_a_clear_status(capture_workload, tmp_path):
    proc = run(capture_workload, "--output", tmp_path / "n.pftrace", "--", sys.executable, "-c", "print('hi')")
    assert proc.returncode == 0
    fields, _ = status_of(proc.stdout)
    assert (fields["tracebox_status"], fields["health_status"], fields["report_status"]) == ("125", "125", "125")
    assert "report" not in fields
    assert "workload exited before activating Perfetto diagnostics" in proc.stderr
    assert "do not retry it because diagnostics failed" in proc.stderr
    assert not (tmp_path / "n.pftrace").exists()


def test_a_workload_that_dies_leaves_an_incomplete_trace_streaming_keeps_what_was_flushed(capture_workload, table,
                                                                                        tmp_path):
    wl = workload(tmp_path, preview_body(table, "time.sleep(2.5)\nos._exit(0)\n"))
    proc = run(capture_workload, "--mode", "streaming", "--output", tmp_path / "dead.pftrace", "--",
               sys.executable, wl)
    assert proc.returncode == 0
    fields, _ = status_of(proc.stdout)
    assert fields["tracebox_status"] == "70"  # started, never finalized
    assert fields["health_status"] == "65"
    health = health_of(proc.stdout)
    assert health["capture_complete"] == "0" and health["finalization_observed"] == "0"
    assert health["operation_root_count"] == "1"  # flushed before the workload died
    assert fields["report_status"] == "0"  # the report is made from the retained intervals
    assert "was not finalized" in proc.stderr and "do not retry" in proc.stderr
    # Short mode holds the trace in memory: a dying workload keeps only the preamble.
    proc = run(capture_workload, "--output", tmp_path / "dead_short.pftrace", "--", sys.executable, wl)
    fields, _ = status_of(proc.stdout)
    assert fields["tracebox_status"] == "70" and fields["health_status"] == "65"
    assert health_of(proc.stdout)["operation_root_count"] == "0"
    assert fields["report_status"] != "0" and "report" not in fields


# ---------------------------------------------------------------- no clobber

def test_existing_traces_and_reports_are_never_overwritten(capture_workload, table, tmp_path):
    ran = tmp_path / "ran"
    wl = workload(tmp_path, f"open({str(ran)!r}, 'w').close()\n" + preview_body(table))
    (tmp_path / "a.pftrace").write_text("old trace")
    proc = run(capture_workload, "--output", tmp_path / "a.pftrace", "--", sys.executable, wl)
    assert proc.returncode == 73 and "already exists" in proc.stderr
    assert (tmp_path / "a.pftrace").read_text() == "old trace"
    (tmp_path / "b.profile.html").write_text("old report")
    proc = run(capture_workload, "--output", tmp_path / "b.pftrace", "--", sys.executable, wl)
    assert proc.returncode == 73 and (tmp_path / "b.profile.html").read_text() == "old report"
    (tmp_path / "dangling.pftrace").symlink_to(tmp_path / "nowhere")
    proc = run(capture_workload, "--output", tmp_path / "dangling.pftrace", "--", sys.executable, wl)
    assert proc.returncode == 73 and not (tmp_path / "nowhere").exists()
    # Non-.pftrace names get TRACE.profile.html.
    (tmp_path / "c.trace.profile.html").write_text("old")
    assert run(capture_workload, "--output", tmp_path / "c.trace", "--", sys.executable, wl).returncode == 73
    assert not ran.exists()  # all refused before the workload ran
    # A report that appears while the workload runs is kept: R=73, the old file intact.
    late = tmp_path / "late.profile.html"
    wl2 = workload(tmp_path, preview_body(table, f"open({str(late)!r}, 'w').write('theirs')\n"), "wl2.py")
    proc = run(capture_workload, "--output", tmp_path / "late.pftrace", "--", sys.executable, wl2)
    fields, _ = status_of(proc.stdout)
    assert fields["report_status"] == "73" and "report" not in fields
    assert late.read_text() == "theirs"
    assert "do not retry" in proc.stderr


# ------------------------------------------------------ arguments and setup

@pytest.mark.parametrize("args,code", [
    (["--output"], 64),
    (["--bogus", "--output", "x.pftrace", "--", "true"], 64),
    (["--sample-hz", "500", "--output", "x.pftrace", "--", "true"], 64),
    (["--mode", "fast", "--output", "x.pftrace", "--", "true"], 64),
    (["--", "true"], 64),
    (["--output", "x.pftrace"], 64),
    (["--output", "x.pftrace", "--"], 64),
    (["--output", "x.pftrace", "--", "definitely-not-a-command-xyz"], 127),
])
def test_argument_and_setup_failures_happen_before_the_workload(capture_workload, tmp_path, args, code):
    proc = run(capture_workload, *args, cwd=tmp_path)
    assert proc.returncode == code, proc.stderr
    assert "workload_status=" not in proc.stdout
    assert not (tmp_path / "x.pftrace").exists()


def test_help_and_non_executable_commands(capture_workload, tmp_path):
    proc = run(capture_workload, "--help")
    assert proc.returncode == 0 and "--mode short|streaming|deep-system" in proc.stdout
    script = tmp_path / "noexec.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    proc = run(capture_workload, "--output", tmp_path / "x.pftrace", "--", script)
    assert proc.returncode == 126


def test_workload_arguments_are_passed_literally_and_the_script_runs_once(capture_workload, table, tmp_path):
    counter = tmp_path / "runs"
    wl = workload(tmp_path, preview_body(table, (
        f"open({str(counter)!r}, 'a').write('x')\n"
        f"json.dump(sys.argv[1:], open({str(tmp_path / 'argv.json')!r}, 'w'))\n")))
    wl.chmod(0o755)
    wl.write_text(f"#!{sys.executable}\n" + wl.read_text())
    odd = ["a b", "ünï", "-x", "--output", "$(touch pwned)", "'\"", ""]
    proc = run(capture_workload, "--output", tmp_path / "lit.pftrace", "--", wl, *odd, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "argv.json").read_text()) == odd
    assert counter.read_text() == "x"
    assert not (tmp_path / "pwned").exists()


def test_the_handshake_stays_with_the_workload(capture_workload, tmp_path):
    """Child processes never see the handshake, and cannot activate a capture of their own."""
    child = (
        "import os, json, deltafunnel\n"
        "env = sorted(k for k in os.environ if k.startswith('DELTA_FUNNEL_PERFETTO_'))\n"
        "try:\n"
        "    deltafunnel.init_perfetto_diagnostics()\n"
        "    err = None\n"
        "except deltafunnel.DeltaFunnelError as e:\n"
        "    err = [e.phase, e.kind]\n"
        "print(json.dumps({'env': env, 'err': err}))\n"
    )
    body = (
        "before = sorted(k for k in os.environ if k.startswith('DELTA_FUNNEL_PERFETTO_'))\n"
        "assert len(before) == 6, before\n"
        "assert deltafunnel.init_perfetto_diagnostics() is True\n"
        "assert deltafunnel.init_perfetto_diagnostics() is False\n"
        "import subprocess\n"
        f"out = subprocess.run([sys.executable, '-c', {child!r}], capture_output=True, text=True).stdout\n"
        f"open({str(tmp_path / 'child.json')!r}, 'w').write(out)\n"
    )
    wl = workload(tmp_path, body)
    proc = run(capture_workload, "--output", tmp_path / "h.pftrace", "--", sys.executable, wl)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads((tmp_path / "child.json").read_text())
    assert seen == {"env": [], "err": ["perfetto_diagnostics", "capture_unavailable"]}


def test_a_workload_process_that_is_not_the_command_is_refused(capture_workload, tmp_path):
    """A shell that starts Python as a child: the handshake names the shell's pid, so Python refuses it."""
    inner = tmp_path / "inner.py"
    inner.write_text(
        "import deltafunnel\n"
        "try:\n"
        "    deltafunnel.init_perfetto_diagnostics()\n"
        "except deltafunnel.DeltaFunnelError as e:\n"
        "    print('KIND', e.phase, e.kind)\n")
    proc = run(capture_workload, "--output", tmp_path / "sh.pftrace", "--", "/bin/sh", "-c",
               f"{shlex.quote(sys.executable)} {shlex.quote(str(inner))}; true")
    assert "KIND perfetto_diagnostics capture_handshake_failed" in proc.stdout
    assert status_of(proc.stdout)[0]["tracebox_status"] == "125"


# ------------------------------------------------------------ sampler, user

def test_the_timer_sampler_forced_still_records_multi_frame_stacks(capture_workload, table, tmp_path):
    perfetto_pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")
    wl = workload(tmp_path, preview_body(table))
    env = dict(os.environ, DELTAFUNNEL_PROFILE_SAMPLER="thread_cpu_timer")
    proc = run(capture_workload, "--output", tmp_path / "b.pftrace", "--", sys.executable, wl, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "sampler thread_cpu_timer" in proc.stderr
    trace = perfetto_pb.Trace.FromString((tmp_path / "b.pftrace").read_bytes())
    stacks = {}
    samples = []
    for p in trace.packet:
        for cs in p.interned_data.callstacks:
            stacks[cs.iid] = list(cs.frame_ids)
        if p.HasField("perf_sample"):
            samples.append(p.perf_sample)
    assert samples
    deep = [s for s in samples if s.callstack_iid and len(stacks.get(s.callstack_iid, [])) >= 3]
    assert len(deep) >= 0.5 * len(samples), (len(deep), len(samples))


def test_an_unprivileged_user_can_capture(capture_workload, table, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("runs as the current (already unprivileged) user in the other tests")
    import pwd
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no `nobody` user on this host")
    import shutil
    import tempfile
    work = pathlib.Path(tempfile.mkdtemp(prefix="df-nobody-"))  # pytest's own tmp dirs are private to root
    os.chmod(work, 0o777)
    shutil.copytree(table, work / "table")
    for d, _, files in os.walk(work / "table"):
        os.chmod(d, 0o755)
        for f in files:
            os.chmod(os.path.join(d, f), 0o644)
    wl = workload(work, preview_body(work / "table"))
    os.chmod(wl, 0o644)
    env = dict(os.environ, HOME=str(work), TMPDIR=str(work))

    def drop():
        os.setgid(nobody.pw_gid)
        os.setgroups([])
        os.setuid(nobody.pw_uid)

    # An interpreter `nobody` may run (a venv of root's private Python may not be): this one, else the
    # system Python of the same version, with the package directory on its path.
    package_parent = str(pathlib.Path(deltafunnel.__file__).parent.parent)
    env["PYTHONPATH"] = package_parent
    python = None
    for candidate in (sys.executable, f"/usr/bin/python{sys.version_info[0]}.{sys.version_info[1]}"):
        try:
            probe = subprocess.run([candidate, "-c", "import deltafunnel"], preexec_fn=drop, env=env,
                                   capture_output=True, text=True, cwd=work)
        except OSError:
            continue
        if probe.returncode == 0:
            python = candidate
            break
    if python is None:
        pytest.skip("no Python interpreter and package readable by `nobody` on this host")
    capture_workload = str(pathlib.Path(package_parent) / "deltafunnel" / "perfetto" / "capture-workload")
    proc = subprocess.run([capture_workload, "--output", str(work / "u.pftrace"), "--", python, str(wl)],
                          preexec_fn=drop, env=env, capture_output=True, text=True, timeout=300, cwd=work)
    assert proc.returncode == 0, proc.stderr
    fields, _ = status_of(proc.stdout)
    assert fields["report_status"] == "0"
    assert int(health_of(proc.stdout)["perf_sample_count"]) > 0
    assert (work / "u.pftrace").stat().st_uid == nobody.pw_uid
    shutil.rmtree(work)


# ------------------------------------------------- the other two commands

def test_capture_health_and_doctor_commands(capture_workload, table, tmp_path):
    from deltafunnel import _perfetto
    wl = workload(tmp_path, preview_body(table))
    assert run(capture_workload, "--output", tmp_path / "ch.pftrace", "--", sys.executable, wl).returncode == 0
    cli = _perfetto.program_path()
    proc = subprocess.run([cli, "capture-health", str(tmp_path / "ch.pftrace"), "536870912"], capture_output=True,
                          text=True)
    assert proc.returncode == 0
    header, row = proc.stdout.splitlines()
    assert header.split(",") == HEALTH_COLUMNS
    assert row.split(",")[0] == "1" and row.split(",")[-2] == "536870912"
    assert subprocess.run([cli, "capture-health", str(tmp_path / "ch.pftrace"), "0"]).returncode == 64
    assert subprocess.run([cli, "capture-health", str(tmp_path / "missing")], capture_output=True).returncode == 66
    doctor = subprocess.run([cli, "doctor"], capture_output=True, text=True)
    assert doctor.returncode == 0, doctor.stdout
    for word in ("sampler perf_event", "sampler cpu timers", "sampler chosen", "symbols (ELF)",
                 "source lines (DWARF)", "debuginfod", "deep-system", "summary:"):
        assert word in doctor.stdout
