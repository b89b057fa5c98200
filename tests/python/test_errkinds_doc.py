"""The one list of error kinds (include/deltafunnel/df_errkinds.def) and
the table generated from it in docs/diagnostics.md stay in step, and the
list itself stays well formed: every constant and every kind string once,
the reference's diagnostics kinds present with their spelling."""

import importlib.util
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
SCRIPT = ROOT / "scripts" / "errkinds_doc.py"
DEF = ROOT / "include" / "deltafunnel" / "df_errkinds.def"


@pytest.fixture(scope="module")
def gen():
    spec = importlib.util.spec_from_file_location("errkinds_doc", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def entries(gen):
    return gen.parse_def(DEF.read_text(encoding="utf-8"))


def test_every_def_line_is_read(entries):
    text = DEF.read_text(encoding="utf-8")
    assert len(entries) == len(re.findall(r"^X\(", text, re.M))
    assert len(entries) > 100


def test_constants_and_kind_strings_are_unique(entries):
    constants = [e[0] for e in entries]
    kinds = [e[1] for e in entries]
    assert len(set(constants)) == len(constants), [c for c in constants if constants.count(c) > 1]
    assert len(set(kinds)) == len(kinds), [k for k in kinds if kinds.count(k) > 1]
    for constant, kind, phase, meaning in entries:
        assert re.fullmatch(r"[a-z][a-z0-9_]*", kind), kind
        assert re.fullmatch(r"[a-z][a-z_]*", phase), (kind, phase)
        assert meaning.strip(), kind


def test_doc_table_matches_the_def(gen):
    doc = gen.DOC.read_text(encoding="utf-8")
    entries = gen.parse_def(DEF.read_text(encoding="utf-8"))
    assert gen.render(doc, entries) == doc, "docs/diagnostics.md is stale: run scripts/errkinds_doc.py"


def test_check_mode_detects_a_stale_table(gen, entries):
    doc = gen.DOC.read_text(encoding="utf-8")
    changed = [(c, k, p, m + " (changed)") if k == "profile_already_active" else (c, k, p, m)
               for c, k, p, m in entries]
    assert gen.render(doc, changed) != doc
    fewer = [e for e in entries if e[1] != "malformed_trace"]
    assert "`malformed_trace`" not in gen.table(fewer)
    with pytest.raises(ValueError):
        gen.render("no markers here\n", entries)
    with pytest.raises(ValueError):
        gen.parse_def('X(DF_ERR_BROKEN, "broken")\n')


# Diagnostics kinds of the reference implementation (deltafunnel 0.6.0) that
# this implementation raises: they must be spelled as there.
REFERENCE_DIAGNOSTICS_KINDS = [
    ("missing_command", "argument"), ("unknown_command", "argument"), ("missing_input", "argument"),
    ("missing_output_value", "argument"), ("duplicate_output", "argument"),
    ("missing_artifact_output_value", "argument"), ("duplicate_artifact_output", "argument"),
    ("multiple_inputs", "argument"), ("invalid_limit", "argument"), ("invalid_depth", "argument"),
    ("invalid_semantic_id", "argument"), ("invalid_function_id", "argument"), ("invalid_filter", "argument"),
    ("invalid_sort", "argument"), ("incompatible_selectors", "argument"), ("incompatible_sort", "argument"),
    ("duplicate_option", "argument"), ("semantic_not_found", "argument"), ("function_not_found", "argument"),
    ("artifact_too_large", "input"), ("truncated_artifact", "input"), ("invalid_artifact_magic", "input"),
    ("unsupported_artifact_version", "input"), ("invalid_artifact_header", "input"),
    ("unsupported_ranked_schema", "input"), ("trailing_artifact_bytes", "input"),
    ("artifact_changed_while_reading", "input"), ("not_file", "input"), ("unreadable", "input"),
    ("incomplete_capture", "health"), ("invalid_ranked_profile", "aggregate_validation"),
    ("missing_file_name", "output"), ("parent_not_directory", "output"), ("aliases_input", "output"),
    ("profile_outputs_alias", "output"), ("persist_failed", "output"), ("terminal_write_failed", "output"),
    ("not_available", "ranked_profile"), ("output_unavailable", "ranked_profile"),
    ("profile_already_active", "ranked_profile"), ("capture_scope_unavailable", "ranked_profile"),
    ("temporary_directory_failed", "ranked_profile"), ("capture_failed", "ranked_profile"),
    ("invalid_logger", "perfetto_diagnostics"), ("invalid_wait_timeout", "perfetto_diagnostics"),
    ("capture_handshake_invalid", "perfetto_diagnostics"), ("capture_handshake_failed", "perfetto_diagnostics"),
    ("capture_timeout", "perfetto_diagnostics"), ("capture_unavailable", "perfetto_diagnostics"),
]


@pytest.mark.parametrize("kind,phase", REFERENCE_DIAGNOSTICS_KINDS)
def test_reference_diagnostics_kinds_are_listed(entries, kind, phase):
    by_kind = {e[1]: e for e in entries}
    assert kind in by_kind, f"{kind} is not in df_errkinds.def"
    assert by_kind[kind][2] == phase


def test_no_reason_context_duplicates_a_kind():
    """Diagnostics code sets specific kinds as df_error.kind: no {"reason": ...}
    context repeats them and nothing reads such a context back."""
    sources = list((ROOT / "src" / "report").glob("*.[ch]")) + [ROOT / "src" / "session" / "profile.c"]
    sources += list((ROOT / "programs" / "delta-funnel-perfetto").glob("*.[ch]"))
    sources += [ROOT / "python" / "src" / "errors.c", ROOT / "include" / "deltafunnel" / "deltafunnel.h"]
    for path in sources:
        text = path.read_text(encoding="utf-8")
        assert '\\"reason\\"' not in text, f"{path.name} writes a reason context"
        assert "df_report_error_reason" not in text and "df_diagnostics_error_kind" not in text, path.name
