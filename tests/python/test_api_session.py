"""Session construction, option classes, module functions and signatures:
the reference's public surface, TypeErrors and (phase, kind, message)."""

import inspect
import pathlib

import pytest

import deltafunnel
from deltafunnel import DeltaFunnelError


def dfe(fn, phase, kind, message=None):
    with pytest.raises(DeltaFunnelError) as info:
        fn()
    err = info.value
    assert (err.phase, err.kind) == (phase, kind), (err.phase, err.kind, err.message)
    if message is not None:
        assert err.message == message
        assert str(err) == message
    return err


def test_module_surface_matches_reference():
    assert deltafunnel.__all__ == [
        "DeltaFunnelError", "init_logging", "init_perfetto_diagnostics", "_run_perfetto_cli", "MssqlOutputSpec",
        "RankedProfileConfig", "FileRepartitioning", "ProviderScanOptions", "Session", "PendingDeltaSource",
        "Preview", "Table", "__version__",
    ]
    assert isinstance(deltafunnel.__version__, str) and deltafunnel.__version__.count(".") == 2
    for name in ["Session", "Table", "Preview", "PendingDeltaSource", "ProviderScanOptions", "FileRepartitioning",
                 "RankedProfileConfig", "MssqlOutputSpec", "DeltaFunnelError"]:
        assert getattr(deltafunnel, name).__module__ == "deltafunnel"
    assert issubclass(DeltaFunnelError, Exception)
    assert (pathlib.Path(deltafunnel.__file__).parent / "py.typed").exists()
    assert (pathlib.Path(deltafunnel.__file__).parent / "__init__.pyi").exists()


def test_signatures_match_reference():
    sig = lambda f: str(inspect.signature(f))
    assert sig(deltafunnel.Session) == (
        "(*, default_mssql_connection_string=None, target_partitions=None, output_batch_size=None, "
        "provider_scan_options=None, validation_options=None, schema_options=None)")
    assert sig(deltafunnel.Session.delta_lake) == (
        "(self, /, source_uri, *, version=None, storage_options=None, name=None, progress=None)")
    assert sig(deltafunnel.Session.table_from_sql) == "(self, /, sql)"
    assert sig(deltafunnel.Session.write_all) == (
        "(self, /, outputs, *, options=None, dry_run=None, progress=None, execution_profile=False, "
        "ranked_profile=None)")
    assert sig(deltafunnel.Session.write_all_for_stream_benchmark) == (
        "(self, /, outputs, *, options=None, execution_profile=False, ranked_profile=None)")
    assert sig(deltafunnel.Table.preview) == (
        "(self, /, limit=20, *, progress=None, execution_profile=False, ranked_profile=None)")
    assert sig(deltafunnel.Table.show) == "(self, /, limit=20, *, progress=None)"
    assert sig(deltafunnel.Table.alias) == "(self, /, name)"
    assert sig(deltafunnel.Table.to_mssql) == "(self, /, *, schema, table, load_mode, name=None, connection_string=None)"
    # The reference signature, plus our keyword-only parallel_connections at the end.
    assert sig(deltafunnel.Table.write_to_mssql) == (
        "(self, /, *, schema, table, load_mode, dry_run=None, name=None, connection_string=None, progress=None, "
        "execution_profile=False, ranked_profile=None, parallel_connections=None)")
    assert sig(deltafunnel.PendingDeltaSource.alias) == "(self, /, name, *, progress=None)"
    assert sig(deltafunnel.ProviderScanOptions) == (
        "(*, max_concurrent_file_reads_per_scan=None, max_concurrent_file_reads_per_partition=3, "
        "output_buffer_capacity_per_partition=1, native_async_prefetch_file_count_per_partition=2, "
        "parquet_metadata_size_hint=65536, parquet_full_file_read_threshold=None, intra_file_repartitioning=None, "
        "use_view_types=False)")
    assert sig(deltafunnel.RankedProfileConfig).startswith("(report_path, *, sample_hz=1000, artifact_path=None, ")
    assert sig(deltafunnel.init_logging).startswith("(filter=None, logger=")
    assert sig(deltafunnel.init_perfetto_diagnostics).startswith("(filter=None, logger=")


def test_default_session_constructs_with_safe_repr():
    s = deltafunnel.Session(default_mssql_connection_string="server=tcp:db,1433;password=secret-token")
    assert repr(s) == "deltafunnel.Session(sources=[], derived_tables=[])"
    assert str(s) == repr(s)
    assert "secret-token" not in repr(s)


def test_session_binding_errors_are_type_errors():
    with pytest.raises(TypeError, match=r"Session.__new__\(\) got an unexpected keyword argument 'foo'"):
        deltafunnel.Session(foo=1)
    with pytest.raises(TypeError, match=r"takes 0 positional arguments but 1 was given"):
        deltafunnel.Session(1)
    with pytest.raises(TypeError, match="'int' object is not an instance of 'str'"):
        deltafunnel.Session(default_mssql_connection_string=5)
    with pytest.raises(TypeError, match="'list' object is not an instance of 'dict'"):
        deltafunnel.Session(validation_options=[])


def test_session_rejects_zero_query_options_with_config_phase():
    for name in ["target_partitions", "output_batch_size"]:
        dfe(lambda: deltafunnel.Session(**{name: 0}), "config", "batch_pipeline",
            f"batch pipeline configuration error for option `{name}`: must be greater than zero")
    # Type errors of one option come before zero checks of another.
    dfe(lambda: deltafunnel.Session(target_partitions=0, output_batch_size=-1), "config", "invalid_option_value",
        "`output_batch_size` must be a non-negative integer")


def test_session_rejects_bool_numeric_options_with_config_phase():
    for value in [True, False, -1, 1.5, "3", 2**70]:
        dfe(lambda: deltafunnel.Session(target_partitions=value), "config", "invalid_option_value",
            "`target_partitions` must be a non-negative integer")
    assert repr(deltafunnel.Session(target_partitions=2, output_batch_size=1024)).startswith("deltafunnel.Session(")


def test_blank_connection_string_is_rejected_without_echo():
    err = dfe(lambda: deltafunnel.Session(default_mssql_connection_string="   "), "mssql_target_config",
              "mssql_target_config",
              "MSSQL target configuration error for option `connection.connection_string`: "
              "connection string must not be empty")
    assert err.context is None


def test_session_accepts_schema_options():
    deltafunnel.Session(schema_options={
        "string_policy": {"nvarchar": 40},
        "binary_policy": "varbinary_max",
        "timezone_policy": "datetimeoffset",
        "timestamp_policy": {"datetime2": 3},
        "nanosecond_policy": "round_to_100ns",
        "uint64_policy": "decimal20_0",
        "decimal_policy": "normalize_negative_scale",
        "decimal256_policy": "reject",
        "float_policy": "reject_non_finite",
        "date64_policy": "timestamp_datetime2",
    })
    deltafunnel.Session(schema_options={"string_policy": {"ascii_varchar": 9000}})
    deltafunnel.Session(validation_options={"target_validation_mode": "require",
                                            "dry_run_scan_summary_mode": "exhaust_scan_metadata",
                                            "require_successful_planning": False})


@pytest.mark.parametrize("options, message", [
    ({"string_policy": {"nvarchar": 0}}, "`string_policy` bounded length must be at least 1"),
    ({"string_policy": {"nvarchar": True}}, "`string_policy` must be a non-negative integer"),
    ({"string_policy": {"foo": 3}}, "invalid `string_policy` variant"),
    ({"string_policy": {1: 5}}, "invalid `string_policy` variant"),
    ({"string_policy": {"nvarchar": 3, "x": 1}}, "`string_policy` must contain exactly one policy entry"),
    ({"string_policy": {}}, "`string_policy` must contain exactly one policy entry"),
    ({"string_policy": None}, "`string_policy` must be a string"),
    ({"timestamp_policy": {"datetime2": 8}}, "`timestamp_policy` datetime2 precision must be in 0..=7"),
    ({"timestamp_policy": "x"}, "invalid `timestamp_policy` value `x`"),
    ({"timezone_policy": {"x": 1}}, "`timezone_policy` must be a string"),
    ({"binary_policy": {"varbinary": 0}}, "`binary_policy` bounded length must be at least 1"),
    ({"decimal_policy": "x"}, "invalid `decimal_policy` value `x`"),
])
def test_session_rejects_bad_schema_options_with_config_phase(options, message):
    dfe(lambda: deltafunnel.Session(schema_options=options), "config", "invalid_option_value", message)


def test_option_dictionaries_check_names_first():
    dfe(lambda: deltafunnel.Session(schema_options={"zzz": 5}), "config", "unknown_option",
        "unknown schema option `zzz`")
    dfe(lambda: deltafunnel.Session(validation_options={"target_validation_mode": 5, "x": 1}), "config",
        "unknown_option", "unknown validation option `x`")
    dfe(lambda: deltafunnel.Session(validation_options={1: 2}), "config", "invalid_option_name",
        "option names must be strings")
    dfe(lambda: deltafunnel.Session(validation_options={"require_successful_planning": 1}), "config",
        "invalid_option_value", "`require_successful_planning` must be a bool")
    dfe(lambda: deltafunnel.Session(validation_options={"target_validation_mode": "x"}), "config",
        "invalid_option_value", "invalid `target_validation_mode` value `x`")


def test_session_rejects_provider_scan_option_dictionaries():
    with pytest.raises(TypeError, match="'dict' object is not an instance of 'ProviderScanOptions'"):
        deltafunnel.Session(provider_scan_options={})
    deltafunnel.Session(provider_scan_options=deltafunnel.ProviderScanOptions(max_concurrent_file_reads_per_scan=4))


def test_typed_provider_options_reject_typos_strings_bools_and_invalid_bounds():
    P = deltafunnel.ProviderScanOptions
    o = P()
    assert o.max_concurrent_file_reads_per_scan is None
    assert o.max_concurrent_file_reads_per_partition == 3
    assert o.output_buffer_capacity_per_partition == 1
    assert o.native_async_prefetch_file_count_per_partition == 2
    assert o.parquet_metadata_size_hint == 65536
    assert o.parquet_full_file_read_threshold is None
    assert o.intra_file_repartitioning is deltafunnel.FileRepartitioning.FILL_MISSING_PARALLELISM
    assert o.use_view_types is False
    with pytest.raises(TypeError, match="unexpected keyword argument 'max_concurent'"):
        P(max_concurent=1)
    with pytest.raises(AttributeError):
        o.use_view_types = True
    dfe(lambda: P(max_concurrent_file_reads_per_scan=True), "config", "invalid_option_value",
        "`max_concurrent_file_reads_per_scan` must be a non-negative integer")
    dfe(lambda: P(max_concurrent_file_reads_per_scan="1"), "config", "invalid_option_value")
    dfe(lambda: P(max_concurrent_file_reads_per_partition=None), "config", "invalid_option_value")
    dfe(lambda: P(intra_file_repartitioning="rebalance"), "config", "invalid_option_value",
        "`intra_file_repartitioning` must be a FileRepartitioning value")
    dfe(lambda: P(use_view_types=1), "config", "invalid_option_value", "`use_view_types` must be a bool")
    for name in ["max_concurrent_file_reads_per_scan", "max_concurrent_file_reads_per_partition",
                 "output_buffer_capacity_per_partition", "parquet_metadata_size_hint",
                 "parquet_full_file_read_threshold"]:
        dfe(lambda: P(**{name: 0}), "config", "config", f"configuration error: {name} must be greater than zero")
    assert P(native_async_prefetch_file_count_per_partition=0).native_async_prefetch_file_count_per_partition == 0
    assert P(parquet_metadata_size_hint=None).parquet_metadata_size_hint is None
    r = P(intra_file_repartitioning=deltafunnel.FileRepartitioning.REBALANCE)
    assert r.intra_file_repartitioning is deltafunnel.FileRepartitioning.REBALANCE


def test_file_repartitioning_is_a_closed_enumeration():
    F = deltafunnel.FileRepartitioning
    assert repr(F.REBALANCE) == "FileRepartitioning.REBALANCE"
    assert str(F.FILL_MISSING_PARALLELISM) == "FileRepartitioning.FILL_MISSING_PARALLELISM"
    assert F.REBALANCE == F.REBALANCE and F.REBALANCE != F.FILL_MISSING_PARALLELISM
    assert int(F.FILL_MISSING_PARALLELISM) == 0 and int(F.REBALANCE) == 1
    assert len({F.REBALANCE, F.REBALANCE, F.FILL_MISSING_PARALLELISM}) == 2
    with pytest.raises(TypeError):
        F()
    with pytest.raises(AttributeError):
        F.REBALANCE.x = 1


def test_ranked_profile_config_validates_and_is_frozen():
    R = deltafunnel.RankedProfileConfig
    r = R("query.profile.html")
    assert repr(r) == ('deltafunnel.RankedProfileConfig(report_path="query.profile.html", sample_hz=1000, '
                       'artifact_path=None, max_operator_activity_spans=100000)')
    assert isinstance(r.report_path, pathlib.Path) and r.sample_hz == 1000 and r.artifact_path is None
    assert R(pathlib.Path("a/b.html"), artifact_path="a.dfprofile").artifact_path == pathlib.Path("a.dfprofile")
    for bad in ["", "."]:
        dfe(lambda: R(bad), "config", "invalid_option_value", "`report_path` must name a file")
    for hz in [99, True, "100", -1]:
        dfe(lambda: R("x", sample_hz=hz), "config", "invalid_option_value", "`sample_hz` must be 100 or 1000")
    dfe(lambda: R("x", artifact_path=""), "config", "invalid_option_value", "`artifact_path` must name a file")
    for spans in [0, -1, True, "1", 2**64]:
        dfe(lambda: R("x", max_operator_activity_spans=spans), "config", "invalid_option_value",
            "`max_operator_activity_spans` must be a positive integer")
    with pytest.raises(TypeError):
        R(5)
    with pytest.raises(AttributeError):
        r.sample_hz = 100


def test_logging_filters_are_validated_and_first_install_wins():
    dfe(lambda: deltafunnel.init_logging(filter="delta_funnel=bogus"), "config", "invalid_logging_filter",
        'invalid DeltaFunnel logging filter: error parsing level filter: expected one of "off", "error", "warn", '
        '"info", "debug", "trace", or a number 0-5')
    dfe(lambda: deltafunnel.init_logging(filter="!!!"), "config", "invalid_logging_filter",
        "invalid DeltaFunnel logging filter: invalid filter directive")
    with pytest.raises(TypeError):
        deltafunnel.init_logging(filter=5)
    first = deltafunnel.init_logging(filter="delta_funnel=debug")
    assert deltafunnel.init_logging() is False
    assert first in (True, False)


def test_perfetto_diagnostics_validate_then_report_capture_unavailable():
    dfe(lambda: deltafunnel.init_perfetto_diagnostics(logger=" "), "perfetto_diagnostics", "invalid_logger",
        "Perfetto diagnostics logger name must not be empty")
    dfe(lambda: deltafunnel.init_perfetto_diagnostics(wait_timeout_seconds=-1), "perfetto_diagnostics",
        "invalid_wait_timeout")
    dfe(lambda: deltafunnel.init_perfetto_diagnostics(wait_timeout_seconds=float("nan")), "perfetto_diagnostics",
        "invalid_wait_timeout")
    dfe(lambda: deltafunnel.init_perfetto_diagnostics(filter="bad=bad"), "config", "invalid_logging_filter")
    # Outside capture-workload nobody waits for a capture: the reference's kind.
    # A fresh interpreter, since a logging subscriber installed by another test
    # makes the call return False instead.
    import subprocess
    import sys
    code = ("import deltafunnel\n"
            "try:\n    deltafunnel.init_perfetto_diagnostics()\n"
            "except deltafunnel.DeltaFunnelError as e:\n    print(e.phase, e.kind, 'capture-workload' in str(e))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["perfetto_diagnostics", "capture_unavailable", "True"], out.stderr
    with pytest.raises(TypeError):
        deltafunnel.init_perfetto_diagnostics(wait_timeout_seconds="1")


def test_perfetto_cli_entry_point_runs_the_program(monkeypatch, capfd):
    # The console-script entry point runs delta-funnel-perfetto with sys.argv[1:].
    monkeypatch.setattr("sys.argv", ["delta-funnel-perfetto", "--help"])
    assert deltafunnel._run_perfetto_cli() == 0
    assert "inspect" in capfd.readouterr().out


def test_delta_funnel_error_constructs_like_a_plain_exception():
    e = DeltaFunnelError("boom")
    assert e.args == ("boom",) and str(e) == "boom"
