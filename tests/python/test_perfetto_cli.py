"""delta-funnel-perfetto: report / inspect / diff end to end.

Traces come from two places: deterministic scenarios written by
report_synth_tool (tests/unit/report) and real captures written by the
diag module's diag_trace_tool.  Both programs are built by meson; set
DF_PERFETTO_CLI, DF_REPORT_SYNTH_TOOL and DF_DIAG_TRACE_TOOL to point at
other builds.
"""

import hashlib
import json
import os
import pathlib
import re
import stat
import subprocess
import time

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent.parent


def _find(env, relative):
    path = os.environ.get(env)
    if path:
        return pathlib.Path(path)
    # Several build directories may exist: use the most recently built program.
    found = [build / relative for build in REPO_ROOT.glob("build*")]
    found = [c for c in found if c.is_file() and os.access(c, os.X_OK)]
    return max(found, key=lambda c: c.stat().st_mtime) if found else None


@pytest.fixture(scope="session")
def cli():
    path = _find("DF_PERFETTO_CLI", "programs/delta-funnel-perfetto/delta-funnel-perfetto")
    if path is None:
        raise RuntimeError("delta-funnel-perfetto is not built (meson builds programs/delta-funnel-perfetto)")
    return str(path)


@pytest.fixture(scope="session")
def synth_tool():
    path = _find("DF_REPORT_SYNTH_TOOL", "tests/unit/report/report_synth_tool")
    if path is None:
        raise RuntimeError("report_synth_tool is not built (meson builds tests/unit/report)")
    return str(path)


@pytest.fixture(scope="session")
def diag_tool():
    path = _find("DF_DIAG_TRACE_TOOL", "tests/unit/diag/diag_trace_tool")
    if path is None:
        raise RuntimeError("diag_trace_tool is not built (meson builds tests/unit/diag)")
    return str(path)


def run(cli, *args, stdin=None, cwd=None, timeout=60):
    return subprocess.run([cli, *map(str, args)], input=stdin, capture_output=True, cwd=cwd, timeout=timeout)


def failure(proc):
    """The single JSON failure line on stderr."""
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1, proc.stderr
    doc = json.loads(lines[0])
    assert set(doc) == {"phase", "kind", "message"}
    return doc


@pytest.fixture
def scenario(synth_tool, tmp_path):
    def make(name, path=None):
        out = path or tmp_path / f"{name}.pftrace"
        subprocess.run([synth_tool, name, str(out)], check=True)
        return out
    return make


@pytest.fixture
def artifact(cli, scenario, tmp_path):
    def make(name="preview"):
        trace = scenario(name)
        out = tmp_path / f"{name}.dfprofile"
        proc = run(cli, "report", trace, "--output", tmp_path / f"{name}.profile.html", "--artifact-output", out)
        assert proc.returncode == 0, proc.stderr
        return out
    return make


# ---------------------------------------------------------------- help and arguments

def test_help_texts(cli):
    for args in (["--help"], ["help"], ["-h"]):
        proc = run(cli, *args)
        assert proc.returncode == 0
        assert b"report" in proc.stdout and b"inspect" in proc.stdout and b"diff" in proc.stdout
    report = run(cli, "report", "--help")
    assert report.returncode == 0 and report.stdout == run(cli, "help", "report").stdout
    for token in (b"<INPUT>", b"--output <OUTPUT.profile.html>", b"--artifact-output <OUTPUT.dfprofile>", b"--no-clobber"):
        assert token in report.stdout
    inspect = run(cli, "inspect", "--help")
    assert inspect.returncode == 0 and inspect.stdout == run(cli, "help", "inspect").stdout
    for token in (b"<INPUT.dfprofile>", b"--limit <LIMIT>", b"--semantic <ID>", b"--function <SEMANTIC_ID:FUNCTION_ID>",
                  b"--filter <TEXT>", b"--sort <SORT>", b"--depth <DEPTH>", b"--interactive", b"--full-symbols",
                  b"--all-frames"):
        assert token in inspect.stdout
    assert run(cli, "diff", "--help").returncode == 0


ARGUMENT_ERRORS = [
    ([], "missing_command", "a diagnostics command is required"),
    (["bogus"], "unknown_command", "unknown diagnostics command"),
    (["reprot"], "unknown_command", "unknown diagnostics command; did you mean report?"),
    (["inspcet"], "unknown_command", "unknown diagnostics command; did you mean inspect?"),
    (["report"], "missing_input", "a profile input path is required"),
    (["report", "--output", "first.html", "--output", "second.html", "--unknown"], "duplicate_output",
     "--output may be specified only once"),
    (["report", "a", "b", "--help"], "multiple_inputs", "only one profile input path may be provided"),
    (["report", "x", "--output"], "missing_output_value", "--output requires a path"),
    (["report", "x", "--artifact-output"], "missing_artifact_output_value", "--artifact-output requires a path"),
    (["report", "x", "--artifact-output", "a", "--artifact-output", "b"], "duplicate_artifact_output",
     "--artifact-output may be specified only once"),
    (["report", "x", "--no-clobber", "--no-clobber"], "duplicate_option", "option may be specified only once"),
    (["report", "--output=x.html", "t"], "unknown_option", "unknown option"),
    (["inspect"], "missing_input", "a profile input path is required"),
    (["inspect", "x", "--function", "--limit", "2"], "invalid_function_id",
     "function ID must use SEMANTIC_ID:FUNCTION_ID signed integers"),
    (["inspect", "x", "--limit", "-1"], "invalid_limit", "limit must be between 1 and 200"),
    (["inspect", "x", "--limit", "0"], "invalid_limit", "limit must be between 1 and 200"),
    (["inspect", "x", "--limit", "201"], "invalid_limit", "limit must be between 1 and 200"),
    (["inspect", "x", "--depth", "33"], "invalid_depth", "depth must be between 0 and 32"),
    (["inspect", "x", "--depth", "-1"], "invalid_depth", "depth must be between 0 and 32"),
    (["inspect", "x", "--semantic", "one"], "invalid_semantic_id", "semantic ID must be a signed integer"),
    (["inspect", "x", "--sort", "fastest"], "invalid_sort", "sort must be duration, inclusive-cpu, self-cpu, or name"),
    (["inspect", "x", "--filter", ""], "invalid_filter", "filter must contain between 1 and 128 characters"),
    (["inspect", "x", "--filter", "y" * 129], "invalid_filter", "filter must contain between 1 and 128 characters"),
    (["inspect", "x", "--semantic", "1", "--function", "1:2"], "incompatible_selectors",
     "--semantic and --function cannot be used together"),
    (["inspect", "x", "--function=-1:-2", "--sort", "duration"], "incompatible_sort",
     "function callsites cannot be sorted by exact duration"),
    (["inspect", "x", "--limit", "5", "--limit", "6"], "duplicate_option", "option may be specified only once"),
    (["inspect", "x", "y"], "multiple_inputs", "only one profile input path may be provided"),
    (["inspect", "x", "--verbose"], "unknown_option", "unknown option"),
]


@pytest.mark.parametrize("args,kind,message", ARGUMENT_ERRORS)
def test_argument_errors(cli, args, kind, message):
    proc = run(cli, *args)
    assert proc.returncode == 64
    assert proc.stdout == b""
    assert failure(proc) == {"phase": "argument", "kind": kind, "message": message}


def test_capture_commands_are_part_of_the_program(cli, tmp_path):
    """capture-workload, capture-health and doctor (their behaviour: test_capture_workload.py)."""
    help_text = run(cli, "--help").stdout.decode()
    for command in ("capture-workload", "capture-health", "doctor"):
        assert command in help_text
        assert run(cli, "help", command).returncode == 0
    proc = run(cli, "capture-workload", "--sample-hz", "250", "--output", tmp_path / "x.pftrace", "--", "true")
    assert proc.returncode == 64 and not (tmp_path / "x.pftrace").exists()
    assert run(cli, "capture-health").returncode == 64
    assert run(cli, "doctor", "--bogus").returncode == 64
    doctor = run(cli, "doctor")
    assert doctor.returncode in (0, 69) and b"sampler chosen" in doctor.stdout
    proc = run(cli, "captur-workload")
    assert proc.returncode == 64 and "did you mean capture-workload" in failure(proc)["message"]


# ---------------------------------------------------------------- report

def sha(path):
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


def test_report_default_output_and_artifact(cli, scenario, tmp_path):
    trace = scenario("preview", tmp_path / "query.pftrace")
    before = sha(trace)
    proc = run(cli, "report", trace.name, "--artifact-output", "out/query.dfprofile", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    html = tmp_path / "query.profile.html"
    assert proc.stdout.decode() == f"wrote {html}\n"
    assert html.is_file() and (tmp_path / "out" / "query.dfprofile").is_file()
    assert sha(trace) == before, "the input must never change"
    page = html.read_text()
    assert page.startswith("<!doctype html>")
    assert "http://" not in page and "https://" not in page
    assert str(tmp_path) not in page, "the trace path must not be embedded"
    # No extension: append.
    bare = scenario("preview", tmp_path / "bare")
    assert run(cli, "report", bare).returncode == 0
    assert (tmp_path / "bare.profile.html").is_file()


def test_report_replaces_by_default_and_no_clobber_preserves(cli, scenario, tmp_path):
    trace = scenario("preview")
    out = tmp_path / "r.profile.html"
    out.write_text("old report")
    assert run(cli, "report", trace, "--output", out).returncode == 0
    assert out.read_text().startswith("<!doctype html>")
    out.write_text("old report")
    proc = run(cli, "report", trace, "--output", out, "--no-clobber")
    assert proc.returncode == 73
    assert failure(proc)["kind"] == "persist_failed"
    assert out.read_text() == "old report"


def test_report_alias_checks(cli, scenario, tmp_path):
    trace = scenario("preview")
    before = sha(trace)
    proc = run(cli, "report", trace, "--output", trace)
    assert proc.returncode == 73 and failure(proc) == {"phase": "output", "kind": "aliases_input",
                                                       "message": "output must not name the input file"}
    (tmp_path / "sub").mkdir()
    proc = run(cli, "report", trace, "--output", tmp_path / "sub" / ".." / trace.name)
    assert failure(proc)["kind"] == "aliases_input"
    os.link(trace, tmp_path / "hard.html")
    assert failure(run(cli, "report", trace, "--output", tmp_path / "hard.html"))["kind"] == "aliases_input"
    proc = run(cli, "report", trace, "--output", tmp_path / "x.html", "--artifact-output", tmp_path / "x.html")
    assert proc.returncode == 73 and failure(proc) == {
        "phase": "output", "kind": "profile_outputs_alias",
        "message": "ranked HTML and artifact outputs must name different files"}
    assert failure(run(cli, "report", trace, "--output", tmp_path / "sub"))["kind"] == "not_file"
    assert failure(run(cli, "report", trace, "--output", str(tmp_path) + "/dir/"))["kind"] == "missing_file_name"
    (tmp_path / "plain").write_text("x")
    assert failure(run(cli, "report", trace, "--output", tmp_path / "plain" / "x.html"))["kind"] == "parent_not_directory"
    assert sha(trace) == before
    assert not (tmp_path / "x.html").exists()


def test_report_input_failures(cli, tmp_path):
    proc = run(cli, "report", tmp_path / "missing.pftrace")
    assert proc.returncode == 66 and failure(proc)["kind"] == "unreadable"
    proc = run(cli, "report", tmp_path)
    assert proc.returncode == 66 and failure(proc)["kind"] == "not_file"
    fifo = tmp_path / "pipe.pftrace"
    os.mkfifo(fifo)
    start = time.monotonic()
    proc = run(cli, "report", fifo, timeout=10)
    assert time.monotonic() - start < 2
    assert proc.returncode == 66 and failure(proc)["kind"] == "not_file"
    garbage = tmp_path / "garbage.pftrace"
    garbage.write_bytes(b"\x0a\xff\xff\xff\xff\x0f" + b"x" * 10)
    proc = run(cli, "report", garbage)
    assert proc.returncode == 66
    assert failure(proc) == {"phase": "input", "kind": "malformed_trace",
                             "message": "malformed trace: truncated or corrupt packet framing"}


def test_report_health_and_validation_failures(cli, scenario):
    proc = run(cli, "report", scenario("empty"))
    assert proc.returncode == 65
    assert failure(proc) == {"phase": "health", "kind": "incomplete_capture",
                             "message": "input trace contains no retained Delta Funnel operation"}
    proc = run(cli, "report", scenario("missing_identity"))
    assert proc.returncode == 65
    assert failure(proc)["kind"] == "unsafe_identity"


def test_report_from_artifact_is_byte_identical(cli, scenario, tmp_path):
    trace = scenario("write_all")
    a, b, art = tmp_path / "a.html", tmp_path / "b.html", tmp_path / "w.dfprofile"
    assert run(cli, "report", trace, "--output", a, "--artifact-output", art).returncode == 0
    assert run(cli, "report", art, "--output", b).returncode == 0
    assert a.read_bytes() == b.read_bytes()
    # An artifact is recognised by its magic whatever its extension.
    disguised = tmp_path / "disguised.pftrace"
    disguised.write_bytes(art.read_bytes())
    c = tmp_path / "c.html"
    assert run(cli, "report", disguised, "--output", c).returncode == 0
    assert c.read_bytes() == a.read_bytes()


def test_terminal_write_failure_keeps_outputs(cli, scenario, tmp_path):
    trace = scenario("preview")
    out = tmp_path / "full.html"
    with open("/dev/full", "wb") as full:
        proc = subprocess.run([cli, "report", str(trace), "--output", str(out)], stdout=full, stderr=subprocess.PIPE)
    assert proc.returncode == 73
    assert failure(proc)["kind"] == "terminal_write_failed"
    assert out.read_text().startswith("<!doctype html>")


def test_outputs_are_created_with_missing_parents_and_not_group_writable(cli, scenario, tmp_path):
    trace = scenario("preview")
    out = tmp_path / "a" / "b" / "c.html"
    assert run(cli, "report", trace, "--output", out).returncode == 0
    mode = stat.S_IMODE(out.stat().st_mode)
    assert mode & 0o022 == 0


# ---------------------------------------------------------------- inspect

def test_inspect_requires_an_artifact(cli, scenario):
    proc = run(cli, "inspect", scenario("preview"))
    assert proc.returncode == 66
    assert failure(proc) == {
        "phase": "input", "kind": "ranked_artifact_required",
        "message": "terminal inspection requires a ranked profile artifact; convert a raw trace with "
                   "`report --artifact-output`"}


def test_inspect_rejects_corrupted_artifacts(cli, artifact, tmp_path):
    art = artifact()
    data = bytearray(art.read_bytes())
    data[len(data) // 2] ^= 0x10
    bad = tmp_path / "bad.dfprofile"
    bad.write_bytes(bytes(data))
    proc = run(cli, "inspect", bad)
    assert proc.returncode == 66 and proc.stdout == b""
    assert failure(proc)["kind"] == "artifact_checksum_mismatch"
    bad.write_bytes(b"DFPROF\0\0" + bytes(56))
    assert failure(run(cli, "inspect", bad))["kind"] == "invalid_artifact_magic"
    bad.write_bytes(bytes(data[:40]))
    assert failure(run(cli, "inspect", bad))["kind"] == "truncated_artifact"


def test_inspect_views(cli, artifact):
    art = artifact()
    roots = run(cli, "inspect", art)
    assert roots.returncode == 0, roots.stderr
    lines = roots.stdout.decode().splitlines()
    assert lines[:3] == ["view: ranked-profile", "context: operation-roots", "sort: duration"]
    assert "showing: 1 of 1; truncated: false" in lines
    assert lines[-1].startswith('semantic depth=0 id=semantic:1 name="Delta Funnel preview (operation 1)" kind="operation" '
                                'duration_ns=2000 ')
    sel = run(cli, "inspect", art, "--semantic", "8").stdout.decode()
    assert "context: semantic:8" in sel
    assert re.search(r"^transition: semantic:8 -> function-roots; sort: inclusive-cpu; showing: 2 of 2; truncated: false; "
                     r"sample_basis: sampled-cpu$", sel, re.M)
    assert 'symbol="BlockingTask::poll"' in sel
    full = run(cli, "inspect", art, "--function=8:5", "--full-symbols", "--depth", "2").stdout.decode()
    assert "context: function:8:5" in full and "metric_basis: sampled-cpu; exact_wall_time: not-applicable" in full
    assert 'symbol="decode_plain.constprop.0"' in full
    missing = run(cli, "inspect", art, "--semantic", "99")
    assert missing.returncode == 64 and failure(missing) == {"phase": "argument", "kind": "semantic_not_found",
                                                             "message": "semantic:99 does not exist"}
    missing = run(cli, "inspect", art, "--function", "2:10")
    assert failure(missing) == {"phase": "argument", "kind": "function_not_found", "message": "function:2:10 does not exist"}


def test_interactive_session(cli, artifact):
    art = artifact()
    script = ("a" * 1025 + "\nshow\nlaunch\nhelp\nopen semantic:1\nopen semantic:8\nsort banana\nlimit 1\nquit\n"
              "show\n").encode()
    proc = run(cli, "inspect", art, "--interactive", stdin=script)
    assert proc.returncode == 0
    out = proc.stdout.decode()
    # Initial view + 9 responses (the command after quit is never read).
    assert out.count("-- end --\n") == 10
    assert out.endswith("-- end --\n")
    errors = proc.stderr.decode().splitlines()
    assert errors == ["error: interactive command exceeds the 1024-byte limit",
                      "error: unknown interactive command",
                      "error: semantic target is not an immediate child",
                      "error: invalid sort; expected duration, inclusive-cpu, self-cpu, or name"]
    assert "commands: show, open semantic:ID, open function:SEMANTIC_ID:FUNCTION_ID, up, root, sort METRIC, filter TEXT, " \
           "clear, limit N, help, quit\n-- end --\n" in out
    assert "context: semantic:1" in out and "showing: 1 of 3; truncated: true" in out
    assert "profile> " not in out


def test_interactive_invalid_utf8_then_eof(cli, artifact):
    proc = run(cli, "inspect", artifact(), "--interactive", stdin=b"show \xff\n")
    assert proc.returncode == 0
    assert proc.stdout.decode("utf-8", "replace").count("-- end --\n") == 2
    assert proc.stderr == b"error: interactive command must be valid UTF-8\n"


def test_interactive_prompts_on_a_terminal(cli, artifact):
    import pty
    art = artifact()
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(cli, [cli, "inspect", str(art), "--interactive"])
    out = b""
    deadline = time.monotonic() + 10
    def read_until(marker):
        nonlocal out
        while marker not in out and time.monotonic() < deadline:
            try:
                out += os.read(fd, 65536)
            except OSError:
                break
    read_until(b"profile> ")
    os.write(fd, b"show \xff\n")
    read_until(b"must be valid UTF-8")
    read_until(b"-- end --\r\nprofile> ")
    os.write(fd, b"\x04")  # EOF
    read_until(b"\xff\xff")  # drain until the child exits
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    assert os.WEXITSTATUS(status) == 0
    assert out.count(b"profile> ") == 2
    assert out.count(b"-- end --") == 2


# ---------------------------------------------------------------- diff

def test_diff(cli, artifact, scenario, tmp_path):
    a = artifact("preview")
    b = scenario("incomplete")
    out = tmp_path / "cmp.html"
    proc = run(cli, "diff", a, b, "--output", out)
    assert proc.returncode == 0, proc.stderr
    page = out.read_text()
    assert "preview.dfprofile" in page and "incomplete.pftrace" in page
    assert "http://" not in page and "https://" not in page
    assert failure(run(cli, "diff", a))["kind"] == "missing_input"
    assert failure(run(cli, "diff", a, b, a))["kind"] == "multiple_inputs"
    assert failure(run(cli, "diff", a, b, "--output", a))["kind"] == "aliases_input"
    default = run(cli, "diff", a, b)
    assert default.returncode == 0 and (tmp_path / "preview.diff.html").is_file()


# ---------------------------------------------------------------- real captures

def test_real_capture_report(cli, diag_tool, tmp_path):
    trace = tmp_path / "capture.pftrace"
    stats = subprocess.run([diag_tool, str(trace), "--partitions", "4"], capture_output=True, text=True, timeout=120)
    assert stats.returncode == 0, stats.stderr
    info = json.loads(stats.stdout)
    art = tmp_path / "capture.dfprofile"
    proc = run(cli, "report", trace, "--artifact-output", art)
    assert proc.returncode == 0, proc.stderr
    roots = run(cli, "inspect", art).stdout.decode()
    assert 'name="Delta Funnel preview (operation 1)"' in roots
    assert 'name="Delta Funnel SQL Server write_all (operation 2)"' in roots
    assert "time_unit: nanoseconds" in roots
    listing = run(cli, "inspect", art, "--semantic", "1", "--depth", "2", "--limit", "200").stdout.decode()
    stage = re.search(r'id=semantic:(\d+) name="Execute and collect"', listing)
    assert stage, listing
    if info["samples"] < 20:
        pytest.skip(f"the sampler took only {info['samples']} samples on this host ({info['backend_reason']})")
    # The burn loop is a function root of the stage (its callers are zero-self chains, folded), or
    # lies below another root: a sample taken in a callee's prologue, before its frame exists, skips
    # the burn loop's frame in a frame-pointer walk, and the folded chain above it differs between
    # samples (thread-pool workers, sanitizer runtimes), so search each root's whole subtree.
    roots = run(cli, "inspect", art, "--semantic", stage.group(1), "--depth", "1", "--limit", "200").stdout.decode()
    direct = int(re.search(rf'id=semantic:{stage.group(1)} .*? direct_cpu_samples=(\d+)',
                           run(cli, "inspect", art, "--semantic", "1", "--depth", "2", "--limit", "200").stdout.decode()).group(1))
    node = re.compile(r'id=function:(\d+:\d+) symbol="([^"]*)" .*? inclusive_cpu_samples=(\d+)')
    burn, below_all = [], []
    for fid, symbol, inclusive in node.findall(roots):
        if symbol == "diag_tool_burn":
            burn.append(int(inclusive))
            continue
        below = run(cli, "inspect", art, "--function", fid, "--depth", "32", "--limit", "200",
                    "--filter", "diag_tool_burn").stdout.decode()
        below_all.append(below)
        # diag_tool_burn never calls itself, so its nodes in one subtree are disjoint.
        burn += [int(n) for _, sym, n in node.findall(below) if sym == "diag_tool_burn"]
    # The stage's CPU is the burn loop: it dominates the sampled functions.
    assert burn and sum(burn) * 2 >= direct, (burn, direct, roots, below_all)


def test_capture_without_sampling(cli, diag_tool, tmp_path):
    trace = tmp_path / "spans.pftrace"
    subprocess.run([diag_tool, str(trace), "--no-sampling", "--partitions", "2"], check=True, capture_output=True,
                   timeout=120)
    html = tmp_path / "spans.profile.html"
    proc = run(cli, "report", trace, "--output", html)
    assert proc.returncode == 0, proc.stderr
    assert '<div class="card-label">Sample frequency</div><div class="card-value">Sampling off</div>' in html.read_text()
