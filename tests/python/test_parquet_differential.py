"""Differential tests of the Parquet reader and writer against pyarrow.

Reader: pyarrow writes seeded random tables (flat and nested schemas:
struct, list, map, list of struct, lists of lists), with random writer
settings (codec, dictionary on/off, BYTE_STREAM_SPLIT, DELTA_* column
encodings, data page v1/v2, page and row-group sizes) and null ratios; our
reader must decode exactly what pyarrow decodes, at random batch sizes.

Writer: our writer writes seeded random flat tables; pyarrow must read back
exactly the input, and the Delta statistics summary must match the data.
"""

import ctypes
import datetime
import decimal
import json
import math
import random

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pc = pytest.importorskip("pyarrow.compute")

from dfhelpers import DfTestError, arrow_stream_from_c  # noqa: E402

READER_CASES = 160
NESTED_PROJECTION_CASES = 20
WRITER_CASES = 40


@pytest.fixture(scope="module")
def lib(dftest):
    read = dftest.dftest_parquet_read_ex
    read.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                     ctypes.c_int64, ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    read.restype = ctypes.c_int
    write = dftest.dftest_parquet_write
    write.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int64, ctypes.c_int64,
                      ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
    write.restype = ctypes.c_int
    return dftest


def read_ours(lib, path, batch_size, leaves=None):
    leaves_csv = ",".join(str(i) for i in leaves).encode() if leaves is not None else None
    reader = arrow_stream_from_c(lib.dftest_parquet_read_ex, str(path).encode(), None, leaves_csv, None,
                                 batch_size, 0, 0)
    return reader.read_all()


# ---- random data ---------------------------------------------------------------------------


class Gen:
    """Random Arrow types and arrays from one seeded generator."""

    def __init__(self, seed):
        self.r = random.Random(seed)

    def flat_type(self):
        r = self.r
        choice = r.randrange(20)
        return [
            pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64(),
            pa.float32(), pa.float64(), pa.bool_(), pa.string(), pa.binary(),
            pa.decimal128(r.choice([4, 9, 15, 18, 25, 38]), 2), pa.date32(),
            pa.timestamp(r.choice(["ms", "us", "ns"]), tz=r.choice([None, "UTC"])),
            pa.binary(r.choice([1, 3, 16])), pa.time32("ms"), pa.time64(r.choice(["us", "ns"])),
            pa.float16(),
        ][choice]

    def type(self, depth=0):
        r = self.r
        if depth >= 3 or r.random() < 0.55:
            return self.flat_type()
        kind = r.randrange(5)
        if kind == 0:
            return pa.struct([pa.field(f"f{i}", self.type(depth + 1), nullable=r.random() < 0.8)
                              for i in range(r.randrange(1, 4))])
        if kind == 1:
            return pa.list_(pa.field("element", self.type(depth + 1), nullable=r.random() < 0.8))
        if kind == 2:
            return pa.map_(r.choice([pa.string(), pa.int32()]), self.type(depth + 1))
        if kind == 3:
            return pa.list_(pa.struct([pa.field("a", pa.int64()), pa.field("b", self.flat_type())]))
        return pa.list_(pa.list_(self.flat_type()))

    def values(self, t, n, null_ratio):
        """A Python list of n values of type t (None for nulls)."""
        r = self.r

        def maybe(gen):
            return [None if r.random() < null_ratio else gen() for _ in range(n)]

        if pa.types.is_struct(t):
            cols = {t.field(i).name: self.values(t.field(i).type, n, null_ratio if t.field(i).nullable else 0)
                    for i in range(t.num_fields)}
            return [None if r.random() < null_ratio else {k: v[j] for k, v in cols.items()} for j in range(n)]
        if pa.types.is_map(t):
            def entries():
                m = r.randrange(0, 4)
                keys = self.values(t.key_type, 3 * m + 1, 0)
                seen, out = set(), []
                for k in keys:
                    if k not in seen and len(out) < m:
                        seen.add(k)
                        out.append(k)
                vals = self.values(t.item_type, len(out), null_ratio)
                return list(zip(out, vals))
            return maybe(entries)
        if pa.types.is_list(t):
            vf = t.value_field
            return maybe(lambda: self.values(vf.type, r.randrange(0, 5), null_ratio if vf.nullable else 0))
        if pa.types.is_boolean(t):
            return maybe(lambda: r.random() < 0.5)
        if pa.types.is_integer(t):
            bits = t.bit_width
            lo, hi = (0, 2 ** bits - 1) if pa.types.is_unsigned_integer(t) else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
            small = r.random() < 0.5
            return maybe(lambda: r.randint(max(lo, -50), min(hi, 50)) if small else r.randint(lo, hi))
        if pa.types.is_float16(t):
            import numpy as np
            return maybe(lambda: np.float16(r.uniform(-100, 100)))
        if pa.types.is_floating(t):
            return maybe(lambda: r.choice([r.uniform(-1e6, 1e6), float("nan"), 0.0, -0.0, r.randint(-5, 5) * 0.5]))
        if pa.types.is_string(t):
            return maybe(lambda: "".join(r.choice("abcé€z ") for _ in range(r.randrange(0, 12)))
                         if r.random() < 0.5 else r.choice(["red", "green", "blue"]))
        if pa.types.is_fixed_size_binary(t):
            return maybe(lambda: bytes(r.randrange(256) for _ in range(t.byte_width)))
        if pa.types.is_binary(t):
            return maybe(lambda: bytes(r.randrange(256) for _ in range(r.randrange(0, 10))))
        if pa.types.is_decimal(t):
            digits = t.precision - t.scale
            return maybe(lambda: decimal.Decimal(r.randint(-(10 ** digits) + 1, 10 ** digits - 1)) / 100
                         + decimal.Decimal(r.randint(0, 99)) / 100 * (1 if r.random() < 0.5 else 0))
        if pa.types.is_date32(t):
            return maybe(lambda: datetime.date(1970, 1, 1) + datetime.timedelta(days=r.randint(-30000, 30000)))
        if pa.types.is_timestamp(t):
            return maybe(lambda: r.randint(-2 ** 50, 2 ** 50))
        if pa.types.is_time32(t):
            return maybe(lambda: r.randint(0, 86_399_999))
        if pa.types.is_time64(t):
            scale = 1_000_000 if t.unit == "us" else 1_000_000_000
            return maybe(lambda: r.randint(0, 86_400 * scale - 1))
        raise AssertionError(f"no generator for {t}")

    def table(self, ncols, nrows, nested):
        fields, arrays = [], []
        for i in range(ncols):
            t = self.type() if nested else self.flat_type()
            null_ratio = self.r.choice([0.0, 0.0, 0.1, 0.5, 1.0])
            nullable = null_ratio > 0 or self.r.random() < 0.5
            vals = self.values(t, nrows, null_ratio)
            arrays.append(pa.array(vals, type=t))
            fields.append(pa.field(f"c{i}", t, nullable=nullable))
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


# ---- comparison -----------------------------------------------------------------------------


def _storage(col):
    col = col.combine_chunks() if col.num_chunks else pa.array([], type=col.type)
    return col.storage if isinstance(col.type, pa.ExtensionType) else col


def _py_equal(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_py_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_py_equal(x, y) for x, y in zip(a, b))
    return a == b


def assert_same(ours, theirs, context):
    assert ours.num_rows == theirs.num_rows, context
    assert ours.schema.names == theirs.schema.names, context
    for name, a, b in zip(ours.schema.names, ours.columns, theirs.columns):
        a, b = _storage(a), _storage(b)
        assert a.type == b.type, f"{context}: column {name}: {a.type} != {b.type}"
        if not a.equals(b):
            assert _py_equal(a.to_pylist(), b.to_pylist()), f"{context}: column {name} differs"


# ---- reader ----------------------------------------------------------------------------------


def writer_settings(r, table):
    """Random pyarrow.parquet.write_table keyword arguments valid for the table."""
    kw = {
        "compression": r.choice(["none", "snappy", "gzip", "zstd", "lz4", "brotli"]),
        "data_page_version": r.choice(["1.0", "2.0"]),
        "data_page_size": r.choice([64, 512, 4096, 1 << 20]),
        "row_group_size": r.choice([7, 100, 1000, 1 << 20]),
        "write_statistics": r.random() < 0.8,
        "use_dictionary": r.random() < 0.5,
    }
    if not kw["use_dictionary"] and r.random() < 0.6:
        enc = {}
        for f in table.schema:
            t = f.type
            if pa.types.is_int32(t) or pa.types.is_int64(t):
                choice = r.choice(["DELTA_BINARY_PACKED", "PLAIN", "BYTE_STREAM_SPLIT"])
            elif pa.types.is_integer(t):
                choice = r.choice(["DELTA_BINARY_PACKED", "PLAIN"])
            elif pa.types.is_date32(t) or pa.types.is_timestamp(t):
                choice = r.choice(["DELTA_BINARY_PACKED", "PLAIN"])
            elif pa.types.is_string(t) or pa.types.is_binary(t):
                choice = r.choice(["DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY", "PLAIN"])
            elif pa.types.is_fixed_size_binary(t):
                choice = r.choice(["DELTA_BYTE_ARRAY", "BYTE_STREAM_SPLIT", "PLAIN"])
            elif pa.types.is_float32(t) or pa.types.is_float64(t):
                choice = r.choice(["BYTE_STREAM_SPLIT", "PLAIN"])
            elif pa.types.is_boolean(t) and kw["data_page_version"] == "2.0":
                choice = r.choice(["RLE", "PLAIN"])
            else:
                continue
            enc[f.name] = choice
        if enc:
            kw["column_encoding"] = enc
    elif r.random() < 0.3:
        kw["use_byte_stream_split"] = True
    return kw


@pytest.mark.parametrize("case", range(READER_CASES))
def test_reader_matches_pyarrow(lib, tmp_path, case):
    g = Gen(1000 + case)
    nested = case % 2 == 1
    table = g.table(g.r.randrange(1, 5), g.r.choice([0, 1, 5, 100, 1000, 3000]), nested)
    kw = writer_settings(g.r, table)
    path = tmp_path / "t.parquet"
    try:
        pq.write_table(table, path, **kw)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, OSError) as exc:
        # A combination this pyarrow cannot write (e.g. an encoding for a type): drop the encodings.
        kw.pop("column_encoding", None)
        kw.pop("use_byte_stream_split", None)
        print(f"case {case}: {exc}; writing without column encodings")
        pq.write_table(table, path, **kw)
    theirs = pq.read_table(path, use_threads=False)
    batch = g.r.choice([1, 7, 100, 8192])
    ours = read_ours(lib, path, batch)
    assert_same(ours, theirs, f"case {case} {kw} batch {batch} schema {table.schema}")


@pytest.mark.parametrize("case", range(NESTED_PROJECTION_CASES))
def test_leaf_projection_matches_pyarrow(lib, tmp_path, case):
    """Selecting leaves of a struct gives the struct pruned to them, as pyarrow's dotted columns do."""
    g = Gen(5000 + case)
    inner = pa.struct([pa.field("x", g.flat_type()), pa.field("y", g.flat_type()),
                       pa.field("z", pa.struct([pa.field("p", pa.int32()), pa.field("q", pa.string())]))])
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("s", inner)])
    n = g.r.choice([0, 10, 500])
    table = pa.table({"id": pa.array(range(n), pa.int64()), "s": pa.array(g.values(inner, n, 0.2), type=inner)},
                     schema=schema)
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, row_group_size=97)
    # Leaves in file order: id, s.x, s.y, s.z.p, s.z.q
    names = ["id", "s.x", "s.y", "s.z.p", "s.z.q"]
    chosen = sorted(g.r.sample(range(5), g.r.randrange(1, 5)))
    keep = {names[i] for i in chosen}
    full = pq.read_table(path, use_threads=False)
    cols, fields = [], []
    if "id" in keep:
        cols.append(full.column("id").combine_chunks())
        fields.append(full.schema.field("id"))
    if any(k.startswith("s.") for k in keep):
        s_col = _storage(full.column("s"))
        pruned = prune_struct(s_col, keep, "s.")
        cols.append(pruned)
        fields.append(pa.field("s", pruned.type, full.schema.field("s").nullable))
    theirs = pa.Table.from_arrays(cols, schema=pa.schema(fields))
    ours = read_ours(lib, path, g.r.choice([3, 64, 8192]), leaves=chosen)
    assert_same(ours, theirs, f"case {case} leaves {chosen}")


def prune_struct(arr, keep, prefix):
    """The struct array restricted to the leaves whose dotted paths are in `keep`."""
    fields, children = [], []
    for i, f in enumerate(arr.type):
        path = prefix + f.name
        if pa.types.is_struct(f.type):
            if any(k.startswith(path + ".") for k in keep):
                child = prune_struct(arr.field(i), keep, path + ".")
                fields.append(pa.field(f.name, child.type, f.nullable))
                children.append(child)
        elif path in keep:
            fields.append(f)
            children.append(arr.field(i))
    return pa.StructArray.from_arrays(children, fields=fields, mask=arr.is_null())


def test_first_rows_of_a_large_file_touch_few_bytes(lib, tmp_path):
    n = 400_000
    table = pa.table({"a": pa.array(range(n), pa.int64()), "b": pa.array([f"row {i}" for i in range(n)])})
    path = tmp_path / "big.parquet"
    # No dictionary: the first data page of each column is all a 20-row read needs.
    pq.write_table(table, path, row_group_size=100_000, data_page_size=8192, compression="snappy",
                   use_dictionary=False)
    fn = lib.dftest_parquet_scan_metrics
    fn.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int64, ctypes.POINTER(ctypes.c_int64),
                   ctypes.c_char_p, ctypes.c_size_t]
    m = (ctypes.c_int64 * 6)()
    err = ctypes.create_string_buffer(256)
    assert fn(str(path).encode(), 20, 20, m, err, len(err)) == 0, err.value
    row_groups_total, pruned, row_groups_read, pages, bytes_read, rows = list(m)
    assert (row_groups_total, row_groups_read, rows) == (4, 1, 20)
    assert pages <= 4
    assert bytes_read < path.stat().st_size / 50


# ---- writer ------------------------------------------------------------------------------------


def write_ours(lib, table, path, codec, rg_rows, page_bytes, dictionary):
    from pyarrow.cffi import ffi

    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=777))
    stream = ffi.new("struct ArrowArrayStream*")
    addr = int(ffi.cast("uintptr_t", stream))
    reader._export_to_c(addr)
    summary = ctypes.create_string_buffer(1 << 20)
    err = ctypes.create_string_buffer(1024)
    rc = lib.dftest_parquet_write(ctypes.c_void_p(addr), str(path).encode(), codec.encode(), rg_rows, page_bytes,
                                  int(dictionary), summary, len(summary), err, len(err))
    if rc:
        raise DfTestError(rc, err.value.decode())
    return json.loads(summary.value.decode())


WRITABLE = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64(),
            pa.float32(), pa.float64(), pa.bool_(), pa.string(), pa.binary(), pa.decimal128(9, 2),
            pa.decimal128(18, 4), pa.decimal128(30, 3), pa.date32(), pa.timestamp("us", tz="UTC"),
            pa.timestamp("us"), pa.timestamp("ms"), pa.timestamp("ns", tz="UTC"), pa.binary(5), pa.time32("ms"),
            pa.time64("us")]


@pytest.mark.parametrize("case", range(WRITER_CASES))
def test_writer_output_reads_back_in_pyarrow(lib, tmp_path, case):
    g = Gen(9000 + case)
    n = g.r.choice([0, 1, 50, 2000, 10000])
    fields, arrays = [], []
    for i in range(g.r.randrange(1, 7)):
        t = g.r.choice(WRITABLE)
        null_ratio = g.r.choice([0.0, 0.2, 1.0])
        arrays.append(pa.array(g.values(t, n, null_ratio), type=t))
        fields.append(pa.field(f"c{i}", t, nullable=null_ratio > 0 or g.r.random() < 0.5))
    table = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
    codec = g.r.choice(["none", "snappy", "zstd", "gzip"])
    path = tmp_path / "w.parquet"
    summary = write_ours(lib, table, path, codec, g.r.choice([100, 1000, 0]), g.r.choice([256, 4096, 0]),
                         g.r.random() < 0.7)
    back = pq.read_table(path, use_threads=False)
    assert back.num_rows == n
    for f, col in zip(table.schema, table.columns):
        got = _storage(back.column(f.name))
        want = _storage(col)
        assert got.type == f.type, f"{f.name}: {got.type} != {f.type}"
        if not got.equals(want):
            assert pa.types.is_floating(f.type) and _py_equal(got.to_pylist(), want.to_pylist()), \
                f"case {case} column {f.name} ({f.type}) differs"
    # Our reader agrees too.
    assert_same(read_ours(lib, path, 333), back, f"case {case}")
    # The Delta statistics describe the data.
    assert summary["numRecords"] == n
    for f, col in zip(table.schema, table.columns):
        assert summary["nullCount"][f.name] == col.null_count
        valid = col.drop_null()
        if pa.types.is_integer(f.type) and len(valid):
            assert summary["minValues"][f.name] == pc.min(valid).as_py()
            assert summary["maxValues"][f.name] == pc.max(valid).as_py()
        if pa.types.is_string(f.type) and len(valid):
            lo = pc.min(valid).as_py()
            assert lo.startswith(summary["minValues"][f.name])


def test_enum_annotation_reads_as_pyarrow_does(lib, tmp_path):
    """ENUM-annotated byte arrays: pyarrow gives binary, and so do we."""
    path = tmp_path / "enum.parquet"
    pq.write_table(pa.table({"e": ["a", "b", None]}), path, store_schema=False, write_statistics=False)
    data = bytearray(path.read_bytes())
    # SchemaElement of "e": name, converted_type UTF8 (0), logicalType STRING -> ENUM (4) in both.
    utf8 = bytes([0x18, 0x01, ord("e"), 0x25, 0x00, 0x4C, 0x1C, 0x00, 0x00])
    enum = bytes([0x18, 0x01, ord("e"), 0x25, 0x08, 0x4C, 0x4C, 0x00, 0x00])
    at = data.find(utf8)
    assert at > 0
    data[at:at + len(utf8)] = enum
    path.write_bytes(bytes(data))
    theirs = pq.read_table(path, use_threads=False)
    assert theirs.schema.field("e").type == pa.binary()
    assert_same(read_ours(lib, path, 2), theirs, "enum")


@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_records_spanning_pages(lib, tmp_path, version):
    """Long lists written with tiny pages: records continue across page boundaries."""
    ints = pa.array([list(range(i * 1000, i * 1000 + 3000 + i)) if i % 3 else None for i in range(12)],
                    pa.list_(pa.int64()))
    structs = pa.array([[{"a": j, "b": str(j)} for j in range(2500 + i)] for i in range(12)],
                       pa.list_(pa.struct([("a", pa.int32()), ("b", pa.string())])))
    path = tmp_path / "span.parquet"
    pq.write_table(pa.table({"l": ints, "s": structs}), path, data_page_size=100, write_batch_size=100,
                   use_dictionary=version == "2.0", data_page_version=version)
    theirs = pq.read_table(path, use_threads=False)
    for batch in (1, 5, 8192):
        assert_same(read_ours(lib, path, batch), theirs, f"batch {batch}")
