"""Hand-crafted Parquet files for layouts pyarrow does not write (legacy
two-level lists, INT96 values outside the nanosecond range).

One row group, one PLAIN-encoded, uncompressed data page (v1) per leaf
column, levels as RLE runs of one value each.  The caller states the
schema as a depth-first list of SchemaElement dicts and each leaf column's
repetition levels, definition levels and non-null values, so the file holds
exactly the levels under test.  Only what these tests need is encoded.
"""

import struct

# Thrift compact protocol type codes.
_I32, _I64, _BINARY, _LIST, _STRUCT = 5, 6, 8, 9, 12

# Parquet enums.
REQUIRED, OPTIONAL, REPEATED = 0, 1, 2
INT32, INT64, INT96 = 1, 2, 3
CONVERTED_LIST = 3
_PLAIN, _RLE, _DATA_PAGE, _UNCOMPRESSED = 0, 3, 0, 0


def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _zigzag(n):
    return _varint((n << 1) ^ (n >> 63))


class _Struct:
    """A Thrift compact struct: fields are appended in increasing id order."""

    def __init__(self):
        self.buf = bytearray()
        self.last = 0

    def _header(self, fid, ftype):
        delta = fid - self.last
        if 0 < delta <= 15:
            self.buf.append((delta << 4) | ftype)
        else:
            self.buf.append(ftype)
            self.buf += _zigzag(fid)
        self.last = fid

    def i32(self, fid, v):
        self._header(fid, _I32)
        self.buf += _zigzag(v)
        return self

    def i64(self, fid, v):
        self._header(fid, _I64)
        self.buf += _zigzag(v)
        return self

    def binary(self, fid, v):
        v = v.encode() if isinstance(v, str) else v
        self._header(fid, _BINARY)
        self.buf += _varint(len(v)) + v
        return self

    def struct(self, fid, s):
        self._header(fid, _STRUCT)
        self.buf += s.end()
        return self

    def list(self, fid, etype, items):
        self._header(fid, _LIST)
        n = len(items)
        self.buf.append((n << 4) | etype if n < 15 else 0xF0 | etype)
        if n >= 15:
            self.buf += _varint(n)
        for it in items:
            if etype == _I32:
                self.buf += _zigzag(it)
            elif etype == _BINARY:
                it = it.encode() if isinstance(it, str) else it
                self.buf += _varint(len(it)) + it
            else:
                self.buf += it.end()
        return self

    def end(self):
        return bytes(self.buf) + b"\x00"


def _rle_levels(levels, max_level):
    """RLE/bit-packed hybrid with one RLE run per value, prefixed by its 4-byte length (data page v1)."""
    width = (max_level.bit_length() + 7) // 8
    body = b"".join(_varint(1 << 1) + lv.to_bytes(width, "little") for lv in levels)
    return struct.pack("<I", len(body)) + body


def _plain(physical, values):
    if physical == INT32:
        return b"".join(struct.pack("<i", v) for v in values)
    if physical == INT64:
        return b"".join(struct.pack("<q", v) for v in values)
    if physical == INT96:
        return b"".join(bytes(v) for v in values)   # 12 bytes each, as given
    raise ValueError(physical)


def element(name, repetition=None, physical=None, children=None, converted=None, list_logical=False):
    """A SchemaElement; `children` is the number of children of a group."""
    return {"name": name, "repetition": repetition, "type": physical, "children": children,
            "converted": converted, "list": list_logical}


def _schema_element(e):
    s = _Struct()
    if e["type"] is not None:
        s.i32(1, e["type"])
    if e["repetition"] is not None:
        s.i32(3, e["repetition"])
    s.binary(4, e["name"])
    if e["children"] is not None:
        s.i32(5, e["children"])
    if e["converted"] is not None:
        s.i32(6, e["converted"])
    if e["list"]:
        s.struct(10, _Struct().struct(3, _Struct()))   # LogicalType { LIST: ListType {} }
    return s


def write(path, schema, columns, num_rows):
    """schema: [element(...)] depth first, the root first.  columns: one dict per leaf, in schema order:
    {"path": [...], "type": INT32|INT64|INT96, "max_rep": R, "max_def": D, "rep": [...], "def": [...],
    "values": [...]} (rep/def may be omitted when their maximum is 0)."""
    out = bytearray(b"PAR1")
    chunks = []
    for col in columns:
        body = b""
        n = len(col["def"]) if col["max_def"] else len(col["values"])
        if col["max_rep"]:
            body += _rle_levels(col["rep"], col["max_rep"])
        if col["max_def"]:
            body += _rle_levels(col["def"], col["max_def"])
        body += _plain(col["type"], col["values"])
        dph = _Struct().i32(1, n).i32(2, _PLAIN).i32(3, _RLE).i32(4, _RLE)
        ph = _Struct().i32(1, _DATA_PAGE).i32(2, len(body)).i32(3, len(body)).struct(5, dph).end()
        offset = len(out)
        out += ph + body
        size = len(ph) + len(body)
        meta = (_Struct().i32(1, col["type"]).list(2, _I32, [_PLAIN, _RLE]).list(3, _BINARY, col["path"])
                .i32(4, _UNCOMPRESSED).i64(5, n).i64(6, size).i64(7, size).i64(9, offset))
        chunks.append(_Struct().i64(2, offset).struct(3, meta))
    total = len(out) - 4
    rg = _Struct().list(1, _STRUCT, chunks).i64(2, total).i64(3, num_rows)
    fmd = (_Struct().i32(1, 1).list(2, _STRUCT, [_schema_element(e) for e in schema]).i64(3, num_rows)
           .list(4, _STRUCT, [rg]).binary(6, "deltafunnel tests parquet_craft"))
    footer = fmd.end()
    out += footer + struct.pack("<I", len(footer)) + b"PAR1"
    with open(path, "wb") as f:
        f.write(out)
