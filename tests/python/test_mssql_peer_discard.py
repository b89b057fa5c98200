"""The peer's discard mode (`mssql-peer --discard`) validates bulk rows as
the storing mode does.  A minimal TDS client written here (plain TCP,
PRELOGIN without encryption, LOGIN7, SQL batches, BULK_LOAD messages of
hand-made bytes split into small packets) sends the same streams, valid
and malformed, to a storing peer and to a discarding one; the replies
(error numbers and texts, row counts, whether the connection stays open)
must be the same."""

import socket
import struct

import pytest

from mssql_peer import PASSWORD, USER, Peer

PKT_SQL, PKT_BULK, PKT_LOGIN7, PKT_PRELOGIN = 0x01, 0x07, 0x10, 0x12


class RawTds:
    """Just enough of a TDS 7.4 client to send hand-made bulk streams."""

    def __init__(self, peer, packet_size=512):
        self.sock = socket.create_connection((peer.host, peer.port), timeout=30)
        self.packet_size = packet_size
        version = bytes([15, 0, 0, 0, 0, 0])
        table = b"\x00" + struct.pack(">HH", 11, len(version)) + b"\x01" + struct.pack(">HH", 17, 1) + b"\xff"
        self.send(PKT_PRELOGIN, table + version + b"\x02")
        self.reply()
        self.send(PKT_LOGIN7, self._login7())
        tokens = self.reply()
        assert b"\xad" in tokens, tokens  # LOGINACK

    def _login7(self):
        def u16(s):
            return s.encode("utf-16-le")

        pw = bytes(((b << 4 | b >> 4) & 0xFF) ^ 0xA5 for b in u16(PASSWORD))
        fields = [u16("host"), u16(USER), pw, u16("raw"), u16(""), b"", u16(""), u16(""), u16("")]
        fixed = struct.pack("<IIIIII", 0, 0x74000004, self.packet_size, 0, 0, 0) + bytes([0xE0, 0x03, 0, 0])
        fixed += struct.pack("<iI", 0, 0x409)
        off, pairs, data = 94, b"", b""
        for f in fields:
            pairs += struct.pack("<HH", off + len(data), len(f) // 2)
            data += f
        body = fixed + pairs + b"\x00" * 6 + struct.pack("<HHHHHHI", off + len(data), 0, off + len(data), 0,
                                                          off + len(data), 0, 0) + data
        return struct.pack("<I", len(body)) + body[4:]

    def send(self, ptype, payload, packet_size=None):
        size = (packet_size or self.packet_size) - 8
        chunks = [payload[i:i + size] for i in range(0, len(payload), size)] or [b""]
        out = b""
        for i, c in enumerate(chunks):
            status = 1 if i == len(chunks) - 1 else 0
            out += struct.pack(">BBHHBB", ptype, status, len(c) + 8, 0, i + 1, 0) + c
        self.sock.sendall(out)

    def reply(self):
        """The payload of the next message, or None when the peer closed the connection."""
        payload = b""
        while True:
            head = self._exact(8)
            if head is None:
                return None
            length = struct.unpack(">H", head[2:4])[0]
            payload += self._exact(length - 8) or b""
            if head[1] & 1:
                return payload

    def _exact(self, n):
        buf = b""
        while len(buf) < n:
            try:
                got = self.sock.recv(n - len(buf))
            except ConnectionResetError:
                return None
            if not got:
                return None
            buf += got
        return buf

    def sql(self, text):
        headers = struct.pack("<IIHQI", 22, 18, 2, 0, 1)
        self.send(PKT_SQL, headers + text.encode("utf-16-le"))
        return self.reply()

    def close(self):
        self.sock.close()


def summary(tokens):
    """(error numbers with texts, DONE row counts) of a reply, or 'closed'."""
    if tokens is None:
        return "closed"
    errors, counts, i = [], [], 0
    while i < len(tokens):
        t = tokens[i]
        if t in (0xAA, 0xAB, 0xE3, 0xAD):
            length = struct.unpack("<H", tokens[i + 1:i + 3])[0]
            if t == 0xAA:
                number = struct.unpack("<i", tokens[i + 3:i + 7])[0]
                n = struct.unpack("<H", tokens[i + 9:i + 11])[0]
                errors.append((number, tokens[i + 11:i + 11 + 2 * n].decode("utf-16-le")))
            i += 3 + length
        elif t in (0xFD, 0xFE, 0xFF):
            status = struct.unpack("<H", tokens[i + 1:i + 3])[0]
            counts.append((status & 0x12, struct.unpack("<Q", tokens[i + 5:i + 13])[0]))
            i += 13
        else:
            return ("unparsed", tokens[i:])
    return errors, counts


# ---- bulk streams --------------------------------------------------------

COLL = bytes([0x09, 0x04, 0xD0, 0x00, 0x34])
COLUMNS = [  # (declaration, TYPE_INFO)
    ("a bigint NULL", bytes([0x26, 8])),
    ("b int NOT NULL", bytes([0x26, 4])),
    ("c float NULL", bytes([0x6D, 8])),
    ("d bit NULL", bytes([0x68, 1])),
    ("e decimal(18,4) NULL", bytes([0x6A, 9, 18, 4])),
    ("f datetime2(7) NULL", bytes([0x2A, 7])),
    ("g nvarchar(10) NULL", bytes([0xE7, 20, 0]) + COLL),
    ("h nvarchar(max) NULL", bytes([0xE7, 0xFF, 0xFF]) + COLL),
]
FIXED_COLUMNS = [("x bigint NOT NULL", bytes([0x7F])), ("y int NOT NULL", bytes([0x38])), ("z bit NOT NULL", bytes([0x32]))]


def colmetadata(columns):
    out = b"\x81" + struct.pack("<H", len(columns))
    for decl, ti in columns:
        name = decl.split()[0]
        out += struct.pack("<IH", 0, 0x09) + ti + bytes([len(name)]) + name.encode("utf-16-le")
    return out


def good_row(i):
    v = b"\xd1" + b"\x08" + struct.pack("<q", i) + b"\x04" + struct.pack("<i", i)
    v += (b"\x00" if i % 3 == 0 else b"\x08" + struct.pack("<d", i / 8)) + b"\x01" + bytes([i & 1])
    v += b"\x09\x01" + struct.pack("<Q", i * 7919) + b"\x08" + struct.pack("<Q", i * 10_000_000)[:5] + bytes([0xDA, 0x0B, 0x0B])
    text = f"r{i}".encode("utf-16-le")
    v += struct.pack("<H", len(text)) + text
    v += struct.pack("<QI", 0xFFFFFFFFFFFFFFFE, len(text)) + text + b"\x00\x00\x00\x00"
    return v


def fixed_row(i):
    return b"\xd1" + struct.pack("<qiB", i, i, i & 1)


DONE = b"\xfd" + struct.pack("<HHQ", 0, 0, 0)
N = 300


def stream(kind):
    rows = [good_row(i) for i in range(N)]
    if kind == "valid":
        return rows
    if kind == "int_length_3":
        rows[150] = rows[150][:10] + b"\x03\x01\x02\x03" + rows[150][15:]
    elif kind == "null_in_not_null":
        rows[200] = rows[200][:10] + b"\x00" + rows[200][15:]
    elif kind == "decimal_over_precision":
        r = rows[77]
        i = r.index(b"\x09\x01", 20)
        rows[77] = r[:i + 2] + struct.pack("<Q", 10 ** 18) + r[i + 10:]
    elif kind == "date_out_of_range":
        r = rows[5]
        i = r.index(bytes([0xDA, 0x0B, 0x0B]))
        rows[5] = r[:i] + bytes([0xFF, 0xFF, 0xFF]) + r[i + 3:]
    elif kind == "string_over_max":
        r = rows[260]
        i = r.index(struct.pack("<H", len("r260".encode("utf-16-le"))) + "r260".encode("utf-16-le"))
        rows[260] = r[:i] + struct.pack("<H", 22) + b"x\x00" * 11 + r[i + 10:]
    elif kind == "plp_total_mismatch":
        r = rows[11]
        i = r.index(struct.pack("<Q", 0xFFFFFFFFFFFFFFFE))
        rows[11] = r[:i] + struct.pack("<Q", 99) + r[i + 8:]
    elif kind == "nbcrow_token":
        rows[120] = b"\xd2" + rows[120][1:]
    elif kind == "truncated_last_row":
        rows[-1] = rows[-1][:-3]
    return rows


KINDS = ["valid", "int_length_3", "null_in_not_null", "decimal_over_precision", "date_out_of_range",
         "string_over_max", "plp_total_mismatch", "nbcrow_token", "truncated_last_row"]


def run_load(peer, table, columns, payload, packet_size):
    c = RawTds(peer)
    try:
        decls = ", ".join(d for d, _ in columns)
        summary(c.sql(f"CREATE TABLE {table} ({decls})"))
        names = ", ".join(f"{d.split()[0]} {d.split()[1]}" for d, _ in columns)
        assert summary(c.sql(f"INSERT BULK {table} ({names})"))[0] == []
        c.send(PKT_BULK, payload, packet_size)
        result = summary(c.reply())
        after = summary(c.sql("SELECT 1")) if result != "closed" else "closed"
        return result, after != "closed"
    finally:
        c.close()


@pytest.fixture(scope="module")
def peers():
    with Peer("--tls", "off") as storing, Peer("--tls", "off", "--discard") as discarding:
        yield storing, discarding


@pytest.mark.parametrize("packet_size", [512, 4096])
@pytest.mark.parametrize("kind", KINDS)
def test_discard_mode_rejects_what_storing_rejects(peers, kind, packet_size):
    payload = colmetadata(COLUMNS) + b"".join(stream(kind)) + DONE
    table = f"t_{kind}_{packet_size}"
    stored = run_load(peers[0], table, COLUMNS, payload, packet_size)
    discarded = run_load(peers[1], table, COLUMNS, payload, packet_size)
    assert stored == discarded
    if kind == "valid":
        assert stored == (([], [(0x10, N)]), True)
    else:
        assert stored[0] == "closed" or stored[0][0], stored  # an error, never a silent success
    if kind in ("null_in_not_null",):
        assert stored[0][0][0][0] == 515
    if kind not in ("valid", "null_in_not_null"):
        assert stored[0] != "closed" and stored[0][0][0][0] == 4804  # malformed stream


@pytest.mark.parametrize("cut", [0, 1, 7, 13])
def test_discard_mode_fixed_width_rows(peers, cut):
    """Rows of fixed types only (the stride path); a cut makes the message end inside the last row."""
    rows = [fixed_row(i) for i in range(N)]
    if cut:
        rows[-1] = rows[-1][:-cut]
    payload = colmetadata(FIXED_COLUMNS) + b"".join(rows) + (b"" if cut else DONE)
    table = f"fx_{cut}"
    stored = run_load(peers[0], table, FIXED_COLUMNS, payload, 512)
    discarded = run_load(peers[1], table, FIXED_COLUMNS, payload, 512)
    assert stored == discarded
    if cut == 0:
        assert stored == (([], [(0x10, N)]), True)
    else:
        assert stored[0][0][0][0] == 4804
