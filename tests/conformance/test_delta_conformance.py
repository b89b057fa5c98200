"""Delta reader conformance over ../shared/testdata/delta.

Every table folder holds the table (`delta/`), maybe upstream expected
parquet (`expected/`) and an `expected.json` summary (see the testdata
README).  For each table we check what its expectations allow:

* upstream expected parquet: our rows (every version listed) must equal the
  expected rows exactly, compared as sorted, type-normalised Python values;
* upstream assertions with row counts (per version too): counts must match,
  and for a few tables the asserted values are checked as well;
* "error expected": the read must fail with one of the listed error kinds;
* other assertions and log-derived facts: the snapshot's version, active
  file count and row count (from statistics minus deletion vectors) must
  match, and tables whose data files are present must read exactly that
  many rows.

A table whose check fails must be listed in KNOWN_FAILURES with a reason;
any other failure fails the suite, so no table can silently return wrong
rows.  Of the tables with upstream expected data or asserted row counts, at
least 70% must match exactly; the rate is printed.  The `deltalake`
package reads a few tables as an independent oracle.
"""

import ctypes
import decimal
import json
import math
import os
import pathlib
import shutil
import urllib.parse

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from conftest import shared_testdata_dir  # noqa: E402
from dfhelpers import DfTestError, arrow_stream_from_c  # noqa: E402

# Tables we cannot read correctly yet, with the reason.  Keep this short.
KNOWN_FAILURES = {
    "kernel-rs-golden/deltalog-commit-info": "the log's metaData action has no schemaString (a log-only fixture)",
    "kernel-rs-golden/data-reader-absolute-paths-escaped-chars": "the log has no metaData action (a log-only fixture)",
    "delta/golden-corrupted-last-checkpoint": "the checkpoint's metaData has a null schemaString (a log-only fixture)",
    "kernel-rs-golden/update-deleted-directory": "the checkpoint's metaData has a null schemaString (a log-only fixture)",
    "kernel-rs-golden/data-reader-partition-values": (
        "timestamp partition value '2021-09-08 11:11:11' has no zone; the writer meant its own local zone "
        "(America/Los_Angeles), which the log does not record; like delta-kernel we read it as UTC (7 h apart)"),
}

# Tables whose reader feature we refuse on purpose (never read with wrong rows).
REFUSED = {
    "delta/kernel-catalog-owned-preview": "catalogManaged",
    "kernel-rs/unshredded-variant": "variantType-preview",
    "delta/kernel-spark-shredded-variant-preview-delta": "variantShredding-preview",
    "delta/spark-variant-stats-no-checkpoint": "variantType",
}

# Asserted values (beyond counts) for tables that describe them, as a set of ids.
ASSERTED_IDS = {
    "delta/spark-table-with-dv-special-char": ("id", {1, 3, 5, 7, 9}),
    "delta/kernel-basic-dv-with-checkpoint": ("id", {i for i in range(500) if i % 11 != 0}),
}

ERROR_KINDS = {"delta_snapshot_load", "delta_protocol_compatibility", "delta_log_format", "delta_source_schema"}

DELTA_DIR = None if shared_testdata_dir() is None else shared_testdata_dir() / "delta"


def discover():
    if DELTA_DIR is None or not DELTA_DIR.is_dir():
        return []
    return sorted(str(p.parent.relative_to(DELTA_DIR)) for p in DELTA_DIR.glob("*/*/expected.json"))


TABLES = discover()


# ---------------------------------------------------------------------------
# Calling the C reader


class Reader:
    def __init__(self, lib):
        self.read = lib.dftest_delta_read
        self.read.argtypes = [ctypes.c_char_p, ctypes.c_int64, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_char_p,
                              ctypes.c_size_t]
        self.read.restype = ctypes.c_int
        self.facts_fn = lib.dftest_delta_facts
        self.facts_fn.argtypes = [ctypes.c_char_p, ctypes.c_int64, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t,
                                  ctypes.c_char_p, ctypes.c_size_t]
        self.facts_fn.restype = ctypes.c_int

    def table(self, root, version=-1, columns=None):
        cols = None if columns is None else ",".join(columns).encode()
        return arrow_stream_from_c(self.read, str(root).encode(), version, cols).read_all()

    def facts(self, root, version=-1):
        buf = ctypes.create_string_buffer(1 << 24)
        err = ctypes.create_string_buffer(1024)
        rc = self.facts_fn(str(root).encode(), version, 0, buf, len(buf), err, len(err))
        if rc != 0:
            raise DfTestError(rc, err.value.decode("utf-8", "replace"))
        return json.loads(buf.value.decode())


def error_kind(exc):
    return exc.message.split(":", 1)[0]


# ---------------------------------------------------------------------------
# Normalising Arrow data into comparable Python values


def norm_array(arr):
    """Python values of an Arrow array with timestamps as UTC microseconds,
    maps as sorted pairs, NaN as a marker, structs as dicts."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks else pa.array([], type=arr.type)
    t = arr.type
    nulls = arr.is_null().to_pylist() if len(arr) else []
    if pa.types.is_timestamp(t):
        vals = arr.cast(pa.timestamp("us", t.tz), safe=False).cast(pa.int64()).to_pylist()
    elif pa.types.is_floating(t):
        vals = ["NaN" if v is not None and math.isnan(v) else v for v in arr.to_pylist()]
    elif pa.types.is_struct(t):
        kids = [norm_array(arr.field(i)) for i in range(t.num_fields)]
        names = [t.field(i).name for i in range(t.num_fields)]
        vals = [tuple(sorted(zip(names, row))) for row in zip(*kids)] if kids else [()] * len(arr)
    elif pa.types.is_map(t):
        keys = norm_array(arr.keys)
        items = norm_array(arr.items)
        offs = arr.offsets.to_pylist()
        vals = [tuple(sorted(zip(keys[offs[i]:offs[i + 1]], items[offs[i]:offs[i + 1]]), key=repr))
                for i in range(len(arr))]
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        flat = norm_array(arr.values)
        offs = arr.offsets.to_pylist()
        vals = [tuple(flat[offs[i]:offs[i + 1]]) for i in range(len(arr))]
    elif pa.types.is_dictionary(t):
        return norm_array(arr.cast(t.value_type))
    elif pa.types.is_decimal(t):
        vals = [None if v is None else v.normalize() if v != 0 else decimal.Decimal(0) for v in arr.to_pylist()]
    else:
        vals = arr.to_pylist()
    return [None if n else v for v, n in zip(vals, nulls)]


def norm_rows(table, names):
    cols = []
    lower = {n.lower(): n for n in table.column_names}
    for n in names:
        actual = n if n in table.column_names else lower.get(n.lower())
        if actual is None:
            raise AssertionError(f"column {n} missing from {table.column_names}")
        cols.append(norm_array(table.column(actual)))
    rows = list(zip(*cols)) if cols else [()] * table.num_rows
    return sorted(rows, key=repr)


def expected_table(table_dir, version_key):
    exp = table_dir / "expected"
    if (exp / version_key / "table_content").is_dir():
        files = sorted((exp / version_key / "table_content").glob("*.parquet"))
    else:
        files = sorted(exp.glob("*.parquet"))
    tables = [pq.read_table(f) for f in files]
    return pa.concat_tables(tables, promote_options="permissive") if len(tables) > 1 else tables[0]


def same_type(a, b):
    """Arrow types that hold the same values: timestamps of any unit and zone
    (Spark writes INT96 without a zone), nested types by their value types."""
    if pa.types.is_dictionary(a):
        a = a.value_type
    if pa.types.is_timestamp(a) or pa.types.is_timestamp(b):
        return pa.types.is_timestamp(a) and pa.types.is_timestamp(b)
    if pa.types.is_struct(a) or pa.types.is_struct(b):
        return (pa.types.is_struct(a) and pa.types.is_struct(b) and a.num_fields == b.num_fields and
                all(a.field(i).name == b.field(i).name and same_type(a.field(i).type, b.field(i).type)
                    for i in range(a.num_fields)))
    if pa.types.is_map(a) or pa.types.is_map(b):
        return (pa.types.is_map(a) and pa.types.is_map(b) and same_type(a.key_type, b.key_type) and
                same_type(a.item_type, b.item_type))
    if pa.types.is_list(a) or pa.types.is_list(b):
        return pa.types.is_list(a) and pa.types.is_list(b) and same_type(a.value_type, b.value_type)
    return a == b


def compare_with_expected(got, want):
    """Returns None when equal, else a description of the first difference."""
    if got.num_rows != want.num_rows:
        return f"{got.num_rows} rows, expected {want.num_rows}"
    names = want.column_names
    for n in names:
        if n in got.column_names and not same_type(got.schema.field(n).type, want.schema.field(n).type):
            return f"column {n} has type {got.schema.field(n).type}, expected {want.schema.field(n).type}"
    a, b = norm_rows(got, names), norm_rows(want, names)
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"row {i} differs: got {x!r}, expected {y!r}"
    return None


# ---------------------------------------------------------------------------
# Evaluating one table


def prepared_root(name, tmp_path):
    """The table root to read; the DV template gets its placeholder filled in a copy."""
    root = DELTA_DIR / name / "delta"
    if name != "delta/spark-table-with-dv-special-char":
        return root
    copy = tmp_path / "dv-special"
    shutil.copytree(root, copy)
    folder = copy / "folder&with%special char"
    encoded = urllib.parse.quote(str(folder))
    for commit in (copy / "_delta_log").glob("*.json"):
        commit.write_text(commit.read_text().replace("{{FOLDER_WITH_SPECIAL_CHAR}}", encoded))
    return copy


def version_number(key, latest):
    return -1 if key == "latest" else int(key.lstrip("v"))


def evaluate(reader, name, tmp_path):
    """Returns (exact_candidate, ok, detail)."""
    table_dir = DELTA_DIR / name
    exp = json.loads((table_dir / "expected.json").read_text())
    expected = exp.get("expected", {})
    kinds = expected.get("kind", [])
    derived = exp.get("log_derived", {})
    root = prepared_root(name, tmp_path)
    upstream = expected.get("upstream_expected_data")
    asserted = expected.get("upstream_test_assertions", {})
    exact = bool(upstream) or "rows" in asserted or "rows_by_version" in asserted

    if "error expected" in kinds or asserted.get("expect_error"):
        try:
            reader.facts(root)
            reader.table(root)
        except DfTestError as e:
            return False, error_kind(e) in ERROR_KINDS, f"failed as expected: {e.message}"
        except OSError as e:
            return False, False, f"failed while streaming rather than at load: {e}"
        return False, False, "read succeeded but an error was expected"

    if name in REFUSED:
        try:
            reader.facts(root)
        except DfTestError as e:
            ok = error_kind(e) == "delta_protocol_compatibility" and REFUSED[name] in e.message
            return False, ok, f"refused: {e.message}"
        return False, False, "table with an unsupported reader feature was not refused"

    try:
        if upstream:
            for key in upstream.get("versions", {"latest": {}}):
                got = reader.table(root, version_number(key, None))
                diff = compare_with_expected(got, expected_table(table_dir, key))
                if diff:
                    return exact, False, f"version {key}: {diff}"
        if "rows" in asserted or "rows_by_version" in asserted:
            for v, rows in (asserted.get("rows_by_version") or {"-1": asserted["rows"]}).items():
                got = reader.table(root, int(v))
                if got.num_rows != rows:
                    return exact, False, f"version {v}: {got.num_rows} rows, asserted {rows}"
            if name in ASSERTED_IDS:
                col, ids = ASSERTED_IDS[name]
                got = reader.table(root)
                if set(got.column(col).to_pylist()) != ids or got.num_rows != len(ids):
                    return exact, False, f"asserted values of {col} differ"
        facts = reader.facts(root)
        if "latest_version" in asserted and facts["version"] != asserted["latest_version"]:
            return exact, False, f"version {facts['version']}, asserted {asserted['latest_version']}"
        af = asserted.get("active_files")
        if af is not None:
            want = len(af) if isinstance(af, list) else af
            if facts["num_files"] != want:
                return exact, False, f"{facts['num_files']} active files, asserted {want}"
        elif "active_files" in derived and facts["num_files"] != derived["active_files"]:
            return exact, False, f"{facts['num_files']} active files, log replay says {derived['active_files']}"
        if "latest_version" in derived and facts["version"] != derived["latest_version"]:
            return exact, False, f"version {facts['version']}, log replay says {derived['latest_version']}"
        rows = derived.get("rows_from_stats_minus_dv_cardinality")
        if rows is not None and not upstream and not derived.get("active_files_missing_on_disk"):
            got = reader.table(root)
            if got.num_rows != rows:
                return exact, False, f"{got.num_rows} rows read, statistics say {rows}"
    except (DfTestError, OSError) as e:
        return exact, False, f"error: {getattr(e, 'message', e)}"
    return exact, True, "ok"


# ---------------------------------------------------------------------------
# Tests

_results = {}


@pytest.fixture(scope="module")
def reader(dftest):
    return Reader(dftest)


def result_for(reader, name, tmp_path_factory):
    if name not in _results:
        _results[name] = evaluate(reader, name, tmp_path_factory.mktemp("delta"))
    return _results[name]


@pytest.mark.parametrize("name", TABLES or ["<no shared testdata>"])
def test_table(name, testdata, reader, tmp_path_factory):
    if not TABLES:
        pytest.skip("shared conformance data (../shared/testdata/delta) is not present")
    exact, ok, detail = result_for(reader, name, tmp_path_factory)
    if name in KNOWN_FAILURES:
        if not ok:
            pytest.xfail(f"known failure: {KNOWN_FAILURES[name]} ({detail})")
        return
    assert ok, f"{name}: {detail}"


def test_exact_match_rate(testdata, reader, tmp_path_factory):
    if not TABLES:
        pytest.skip("shared conformance data (../shared/testdata/delta) is not present")
    candidates = matched = 0
    failures = []
    for name in TABLES:
        exact, ok, detail = result_for(reader, name, tmp_path_factory)
        if not exact:
            continue
        candidates += 1
        matched += ok
        if not ok:
            failures.append(f"{name}: {detail}")
    rate = matched / candidates if candidates else 0.0
    print(f"\nDelta conformance: {matched}/{candidates} tables with upstream expectations match exactly ({rate:.1%})")
    for f in failures:
        print("  not matching:", f)
    assert candidates > 0
    assert rate >= 0.70


ORACLE_TABLES = ["dat/basic_partitioned", "dat/multi_partitioned_2", "dat/with_checkpoint",
                 "kernel-rs-golden/data-reader-primitives", "delta-rs/delta-0.8.0-partitioned",
                 "kernel-rs-golden/parquet-all-types", "kernel-rs-golden/data-reader-timestamp_ntz",
                 "delta-rs/COVID-19_NYT"]


@pytest.mark.parametrize("name", ORACLE_TABLES)
def test_against_deltalake(name, testdata, reader):
    deltalake = pytest.importorskip("deltalake")
    root = DELTA_DIR / name / "delta"
    try:
        want = deltalake.DeltaTable(str(root)).to_pyarrow_table()
    except Exception as e:  # the oracle cannot read it: nothing to compare
        pytest.skip(f"deltalake cannot read {name}: {e}")
    got = reader.table(root)
    assert sorted(got.column_names) == sorted(want.column_names)
    diff = compare_with_expected(got, want)
    assert diff is None, diff


def test_time_travel_out_of_range_is_a_snapshot_error(testdata, reader):
    root = DELTA_DIR / "dat/basic_append/delta"
    with pytest.raises(DfTestError) as e:
        reader.table(root, 99)
    assert error_kind(e.value) == "delta_snapshot_load"
    assert "latest version is 1" in e.value.message


def test_projection_and_partition_columns_are_plain_typed(testdata, reader):
    root = DELTA_DIR / "dat/basic_partitioned/delta"
    t = reader.table(root, -1, ["number", "letter"])
    assert t.column_names == ["number", "letter"]
    assert t.schema.field("letter").type == pa.string()
    assert None in t.column("letter").to_pylist()


# ---------------------------------------------------------------------------
# Synthetic tables: Parquet written by pyarrow, logs written here.  These
# need no shared data and pin down provider behaviour the corpora cover
# only thinly (widening, nested column mapping, deletion vectors across row
# groups and batches, pruning counters).

import struct
import uuid
import zlib

Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"


def z85_encode(data):
    data = data + b"\0" * (-len(data) % 4)
    out = []
    for i in range(0, len(data), 4):
        v = struct.unpack(">I", data[i:i + 4])[0]
        block = []
        for _ in range(5):
            block.append(Z85[v % 85])
            v //= 85
        out.extend(reversed(block))
    return "".join(out)


def roaring64(values):
    """Serialised deletion vector: magic + portable 64-bit RoaringBitmap (array/bitset containers)."""
    values = sorted(set(values))
    buckets = {}
    for v in values:
        buckets.setdefault(v >> 32, []).append(v & 0xFFFFFFFF)
    out = struct.pack("<IQ", 1681511377, len(buckets))
    for high in sorted(buckets):
        conts = {}
        for v in buckets[high]:
            conts.setdefault(v >> 16, []).append(v & 0xFFFF)
        keys = sorted(conts)
        out += struct.pack("<III", high, 12346, len(keys))
        for k in keys:
            out += struct.pack("<HH", k, len(conts[k]) - 1)
        offset = 8 + 8 * len(keys)
        for k in keys:
            out += struct.pack("<I", offset)
            offset += 2 * len(conts[k]) if len(conts[k]) <= 4096 else 8192
        for k in keys:
            vals = conts[k]
            if len(vals) <= 4096:
                out += struct.pack(f"<{len(vals)}H", *vals)
            else:
                words = [0] * 1024
                for v in vals:
                    words[v >> 6] |= 1 << (v & 63)
                out += struct.pack("<1024Q", *words)
    return out


def dv_file(bitmap):
    return b"\x01" + struct.pack(">I", len(bitmap)) + bitmap + struct.pack(">I", zlib.crc32(bitmap))


def field(name, typ, nullable=True, metadata=None):
    return {"name": name, "type": typ, "nullable": nullable, "metadata": metadata or {}}


def write_log(root, commits):
    log = pathlib.Path(root) / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    for v, actions in enumerate(commits):
        (log / f"{v:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def protocol(reader=1, writer=2, rf=None, wf=None):
    p = {"minReaderVersion": reader, "minWriterVersion": writer}
    if rf is not None:
        p["readerFeatures"] = rf
        p["writerFeatures"] = wf or rf
    return {"protocol": p}


def metadata(fields, partitions=(), config=None):
    return {"metaData": {"id": "00000000-0000-0000-0000-000000000001", "format": {"provider": "parquet"},
                         "schemaString": json.dumps({"type": "struct", "fields": fields}),
                         "partitionColumns": list(partitions), "configuration": config or {}}}


def add(path, pv=None, stats=None, dv=None):
    a = {"path": path, "partitionValues": pv or {}, "size": 1, "modificationTime": 1, "dataChange": True}
    if stats is not None:
        a["stats"] = json.dumps(stats)
    if dv is not None:
        a["deletionVector"] = dv
    return {"add": a}


@pytest.fixture(scope="module")
def lib(dftest):
    return dftest


@pytest.fixture(scope="module")
def synth(lib):
    return Reader(lib)


def scan_metrics(lib, root, columns=None, pred=None):
    fn = lib.dftest_delta_scan_metrics
    fn.argtypes = [ctypes.c_char_p, ctypes.c_int64, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                   ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
    fn.restype = ctypes.c_int
    buf = ctypes.create_string_buffer(4096)
    err = ctypes.create_string_buffer(1024)
    col, op, lit = pred if pred else (None, None, None)
    enc = lambda x: None if x is None else x.encode()
    rc = fn(str(root).encode(), -1, enc(columns), enc(col), enc(op), enc(lit), buf, len(buf), err, len(err))
    if rc != 0:
        raise DfTestError(rc, err.value.decode())
    return json.loads(buf.value.decode())


def read_batches(lib, root, columns=None, batch_size=0):
    fn = lib.dftest_delta_read_ex
    fn.argtypes = [ctypes.c_char_p, ctypes.c_int64, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                   ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    fn.restype = ctypes.c_int
    cols = None if columns is None else ",".join(columns).encode()
    return arrow_stream_from_c(fn, str(root).encode(), -1, cols, None, None, None, batch_size).read_all()


def test_type_widening_reads_old_files_as_the_table_type(tmp_path, synth):
    old = pa.table({"b": pa.array([1, -2, None], pa.int8()), "f": pa.array([1.5, None, -2.25], pa.float32()),
                    "d": pa.array([decimal.Decimal("1.25"), None, decimal.Decimal("-3.50")], pa.decimal128(5, 2)),
                    "dt": pa.array([0, 1, None], pa.int32()).cast(pa.date32()),
                    "i": pa.array([7, 8, 9], pa.int32())})
    pq.write_table(old, tmp_path / "old.parquet")
    new = pa.table({"b": pa.array([2 ** 40], pa.int64()), "f": pa.array([0.1], pa.float64()),
                    "d": pa.array([decimal.Decimal("12345.6789")], pa.decimal128(10, 4)),
                    "dt": pa.array([86400 * 10 ** 6], pa.timestamp("us")), "i": pa.array([10], pa.int32())})
    pq.write_table(new, tmp_path / "new.parquet")
    fields = [field("b", "long"), field("f", "double"), field("d", "decimal(10,4)"), field("dt", "timestamp_ntz"),
              field("i", "decimal(12,1)")]
    write_log(tmp_path, [[protocol(3, 7, ["typeWidening", "timestampNtz"]), metadata(fields), add("old.parquet")],
                         [add("new.parquet")]])
    t = synth.table(tmp_path)
    assert t.schema.field("b").type == pa.int64()
    assert t.schema.field("d").type == pa.decimal128(10, 4)
    assert t.schema.field("dt").type == pa.timestamp("us")
    rows = sorted(t.to_pylist(), key=lambda r: r["i"])
    assert [r["b"] for r in rows] == [1, -2, None, 2 ** 40]
    assert [r["f"] for r in rows] == [1.5, None, -2.25, 0.1]
    assert [r["d"] for r in rows] == [decimal.Decimal("1.2500"), None, decimal.Decimal("-3.5000"),
                                      decimal.Decimal("12345.6789")]
    dt = [None if r["dt"] is None else r["dt"] - __import__("datetime").datetime(1970, 1, 1) for r in rows]
    assert [None if x is None else x.days for x in dt] == [0, 1, None, 1]
    assert [r["i"] for r in rows] == [decimal.Decimal("7.0"), decimal.Decimal("8.0"), decimal.Decimal("9.0"),
                                      decimal.Decimal("10.0")]


def test_incompatible_file_type_is_an_error_not_wrong_rows(tmp_path, synth):
    pq.write_table(pa.table({"a": pa.array(["x"])}), tmp_path / "f.parquet")
    write_log(tmp_path, [[protocol(), metadata([field("a", "long")]), add("f.parquet")]])
    with pytest.raises(OSError, match="cannot be read as"):
        synth.table(tmp_path)


def test_column_mapping_nested_physical_names_and_missing_columns(tmp_path, synth):
    # The file holds physical names; column `c` was added after it was written.
    inner = pa.struct([("col-x", pa.int32()), ("col-y", pa.string())])
    data = pa.table({"col-a": pa.array([1, 2], pa.int64()),
                     "col-s": pa.array([{"col-x": 5, "col-y": "p"}, None], inner),
                     "col-l": pa.array([[{"col-x": 1, "col-y": "q"}], []], pa.list_(inner))})
    pq.write_table(data, tmp_path / "f.parquet")

    def cm(name, typ, phys, fid):
        return field(name, typ, metadata={"delta.columnMapping.id": fid, "delta.columnMapping.physicalName": phys})

    s_type = {"type": "struct", "fields": [cm("x", "integer", "col-x", 3), cm("y", "string", "col-y", 4)]}
    fields = [cm("a", "long", "col-a", 1), cm("s", s_type, "col-s", 2),
              cm("l", {"type": "array", "elementType": s_type, "containsNull": True}, "col-l", 5),
              cm("c", "string", "col-c", 6)]
    write_log(tmp_path, [[protocol(2, 5), metadata(fields, config={"delta.columnMapping.mode": "name"}),
                          add("f.parquet")]])
    t = synth.table(tmp_path)
    assert t.column_names == ["a", "s", "l", "c"]
    assert t.to_pylist() == [{"a": 1, "s": {"x": 5, "y": "p"}, "l": [{"x": 1, "y": "q"}], "c": None},
                             {"a": 2, "s": None, "l": [], "c": None}]


def test_deletion_vectors_across_row_groups_and_batches(tmp_path, lib):
    n = 70000  # two roaring containers, several row groups and batches
    pq.write_table(pa.table({"id": pa.array(range(n), pa.int64())}), tmp_path / "a.parquet", row_group_size=9000)
    pq.write_table(pa.table({"id": pa.array(range(n, n + 10), pa.int64())}), tmp_path / "b.parquet")
    pq.write_table(pa.table({"id": pa.array(range(n + 10, n + 20), pa.int64())}), tmp_path / "c.parquet")
    deleted_a = set(range(0, n, 7)) | set(range(65536, 65536 + 4400))  # the second is a bitset container
    u = uuid.uuid4()
    prefix = "ab"
    (tmp_path / prefix).mkdir()
    bitmap_a = roaring64(deleted_a)
    (tmp_path / prefix / f"deletion_vector_{u}.bin").write_bytes(dv_file(bitmap_a))
    dv_a = {"storageType": "u", "pathOrInlineDv": prefix + z85_encode(u.bytes), "offset": 1,
            "sizeInBytes": len(bitmap_a), "cardinality": len(deleted_a)}
    bitmap_b = roaring64({0, 9})
    dv_b = {"storageType": "i", "pathOrInlineDv": z85_encode(bitmap_b), "sizeInBytes": len(bitmap_b),
            "cardinality": 2}
    bitmap_c = roaring64({3})
    p_file = tmp_path / "abs dir"
    p_file.mkdir()
    (p_file / "dv.bin").write_bytes(dv_file(bitmap_c))
    dv_c = {"storageType": "p", "pathOrInlineDv": "file://" + urllib.parse.quote(str(p_file / "dv.bin")),
            "offset": 1, "sizeInBytes": len(bitmap_c), "cardinality": 1}
    write_log(tmp_path, [[protocol(3, 7, ["deletionVectors"]), metadata([field("id", "long")]),
                          add("a.parquet", stats={"numRecords": n}, dv=dv_a),
                          add("b.parquet", stats={"numRecords": 10}, dv=dv_b),
                          add("c.parquet", stats={"numRecords": 10}, dv=dv_c)]])
    want = sorted((set(range(n)) - deleted_a) | (set(range(n, n + 10)) - {n, n + 9}) |
                  (set(range(n + 10, n + 20)) - {n + 13}))
    for bs in (0, 1000, 4097):
        t = read_batches(lib, tmp_path, batch_size=bs)
        assert sorted(t.column("id").to_pylist()) == want
    m = scan_metrics(lib, tmp_path)
    assert m["rows"] == len(want)
    assert m["deletion_vectors_applied"] == 3
    assert m["deletion_vector_rows_deleted"] == len(deleted_a) + 3
    assert m["estimated_rows"] == len(want)
    # A corrupt checksum is an error, never unfiltered rows.
    raw = bytearray(dv_file(bitmap_a))
    raw[-1] ^= 0xFF
    (tmp_path / prefix / f"deletion_vector_{u}.bin").write_bytes(bytes(raw))
    with pytest.raises(OSError, match="CRC"):
        read_batches(lib, tmp_path)


def test_partition_and_statistics_pruning(tmp_path, lib):
    fields = [field("p", "integer"), field("d", "date"), field("v", "long")]
    commits = [[protocol(), metadata(fields, partitions=["p", "d"])]]
    for i in range(6):
        name = f"p={i % 3}/f{i}.parquet"
        (tmp_path / f"p={i % 3}").mkdir(exist_ok=True)
        vals = list(range(i * 100, i * 100 + 100))
        pq.write_table(pa.table({"v": pa.array(vals, pa.int64())}), tmp_path / name, row_group_size=25)
        commits[0].append(add(name, pv={"p": str(i % 3), "d": None if i == 5 else f"2024-01-0{i + 1}"},
                              stats={"numRecords": 100, "minValues": {"v": vals[0]}, "maxValues": {"v": vals[-1]},
                                     "nullCount": {"v": 0}}))
    write_log(tmp_path, commits)
    m = scan_metrics(lib, tmp_path, pred=("p", "=", "1"))
    assert (m["files_total"], m["files_planned"], m["rows"]) == (6, 2, 200)
    m = scan_metrics(lib, tmp_path, pred=("d", "is_null", None))
    assert (m["files_planned"], m["rows"]) == (1, 100)
    m = scan_metrics(lib, tmp_path, columns="v", pred=("v", ">=", "450"))
    assert m["files_planned"] == 2  # files 4 and 5
    assert m["row_groups_pruned"] == 2  # 400..424 and 425..449 cannot hold v >= 450
    assert m["rows"] == 150
    t = read_batches(lib, tmp_path, columns=["d", "p"])
    assert t.num_rows == 600 and t.schema.field("p").type == pa.int32() and t.schema.field("d").type == pa.date32()
    m = scan_metrics(lib, tmp_path, columns="")  # no columns at all: rows only
    assert m["rows"] == 600


def test_missing_delta_log_and_protocol_errors(tmp_path, synth):
    with pytest.raises(DfTestError) as e:
        synth.facts(tmp_path)
    assert error_kind(e.value) == "delta_snapshot_load" and "no Delta log found at" in e.value.message
    write_log(tmp_path, [[protocol(3, 7, ["deletionVectors", "futureFeature"]), metadata([field("a", "long")])]])
    with pytest.raises(DfTestError) as e:
        synth.facts(tmp_path)
    assert error_kind(e.value) == "delta_protocol_compatibility"
    assert e.value.message.endswith(": unsupported Delta reader feature `futureFeature`")
