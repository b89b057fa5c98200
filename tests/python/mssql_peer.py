"""Pytest helpers for the loopback SQL Server peer (programs/mssql-peer).

`Peer` starts `mssql-peer --port 0` on 127.0.0.1, reads the
"listening HOST:PORT" line and stops the process on exit.  `peer_binary()`
finds the executable (env MSSQL_PEER, PATH, or a meson build directory),
`make_certificate()` makes a throwaway self-signed certificate with
openssl(1) whose SAN matches 127.0.0.1 and localhost.
"""

import os
import pathlib
import shutil
import subprocess
import tempfile

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
USER = "sa"
PASSWORD = "Secret123!"


def peer_binary():
    """MSSQL_PEER, else the peer of the build that DFTEST_LIB comes from, else
    the newest build*/ peer, else mssql-peer on PATH (installed package)."""
    env = os.environ.get("MSSQL_PEER")
    if env:
        return pathlib.Path(env)
    lib = os.environ.get("DFTEST_LIB")
    if lib:
        candidate = pathlib.Path(lib).resolve().parent.parent.parent / "programs" / "mssql-peer" / "mssql-peer"
        if candidate.exists():
            return candidate
    builds = sorted(REPO_ROOT.glob("build*/programs/mssql-peer/mssql-peer"), key=lambda p: p.stat().st_mtime)
    if builds:
        return builds[-1]
    found = shutil.which("mssql-peer")
    return pathlib.Path(found) if found else None


def dftest_library():
    env = os.environ.get("DFTEST_LIB")
    if env:
        return pathlib.Path(env)
    for build in sorted(REPO_ROOT.glob("build*/tests/tools/libdftest.so")):
        return build
    return None


def make_certificate(directory, cn="localhost"):
    """Writes peer-cert.pem / peer-key.pem (self-signed, SAN localhost + 127.0.0.1)."""
    directory = pathlib.Path(directory)
    cert, key = directory / "peer-cert.pem", directory / "peer-key.pem"
    if not cert.exists():
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
             "-subj", f"/CN={cn}", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
             "-keyout", str(key), "-out", str(cert)],
            check=True, capture_output=True)
    return cert, key


class Peer:
    """A running mssql-peer; use as a context manager."""

    def __init__(self, *args, logins=((USER, PASSWORD),), db=None, max_seconds=600):
        binary = peer_binary()
        if binary is None or not binary.exists():
            raise RuntimeError("mssql-peer not found: build it with meson or set MSSQL_PEER")
        self.tmp = tempfile.TemporaryDirectory(prefix="mssql-peer-")
        self.trace = pathlib.Path(self.tmp.name) / "trace.log"
        cmd = [str(binary), "--port", "0", "--trace", str(self.trace), "--max-seconds", str(max_seconds)]
        for user, password in logins:
            cmd += ["--login", f"{user}:{password}"]
        if db:
            cmd += ["--db", str(db)]
        cmd += [str(a) for a in args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        if not line.startswith("listening "):
            self.proc.kill()
            raise RuntimeError(f"mssql-peer did not start: {line!r} {self.proc.stderr.read()}")
        self.host, port = line.split(" ", 1)[1].rsplit(":", 1)
        self.port = int(port)

    def conn_str(self, **extra):
        parts = {"server": f"tcp:{self.host},{self.port}", "user id": USER, "password": PASSWORD,
                 "TrustServerCertificate": "true"}
        parts.update({k.replace("_", " "): v for k, v in extra.items()})
        return ";".join(f"{k}={v}" for k, v in parts.items() if v is not None)

    def cpu_seconds(self):
        """User + system CPU time the peer has used (from /proc)."""
        fields = pathlib.Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) / ticks

    def trace_text(self):
        return self.trace.read_text() if self.trace.exists() else ""

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.tmp.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class ClientError(Exception):
    """A failure reported by our C client: kind (df_errkind name), SQL Server number, message."""

    def __init__(self, kind, code, message):
        super().__init__(f"{kind} ({code}): {message}")
        self.kind = kind
        self.code = code
        self.message = message


class Client:
    """ctypes bindings of tests/tools/dftest_mssql.c (our TDS client)."""

    def __init__(self, lib):
        import ctypes
        self.ctypes = ctypes
        self.lib = lib
        try:
            lib.dftest_mssql_exec
        except AttributeError:
            import pytest
            pytest.skip("libdftest was built without tests/tools/dftest_mssql.c (add it to tests/tools/meson.build)")
        c = ctypes
        lib.dftest_mssql_exec.argtypes = [c.c_char_p, c.c_char_p, c.c_uint32, c.POINTER(c.c_int64), c.c_char_p, c.c_size_t]
        lib.dftest_mssql_query.argtypes = [c.c_char_p, c.c_char_p, c.c_int, c.c_void_p, c.c_char_p, c.c_size_t]
        lib.dftest_mssql_connect_info.argtypes = [c.c_char_p, c.c_char_p, c.c_size_t, c.c_char_p, c.c_size_t]
        lib.dftest_mssql_bulk_load.argtypes = [c.c_char_p] * 4 + [c.c_void_p, c.POINTER(c.c_int64), c.c_char_p, c.c_size_t]
        lib.dftest_mssql_session.argtypes = [c.c_char_p, c.c_char_p, c.c_char_p, c.c_size_t, c.c_char_p, c.c_size_t]

    def _check(self, rc, errbuf):
        if rc != 0:
            kind, code, message = errbuf.value.decode("utf-8", "replace").split("|", 2)
            raise ClientError(kind, int(code), message)

    def exec(self, conn_str, sql, timeout_ms=0):
        c = self.ctypes
        rows, eb = c.c_int64(), c.create_string_buffer(2048)
        self._check(self.lib.dftest_mssql_exec(conn_str.encode(), sql.encode(), timeout_ms, c.byref(rows), eb, 2048), eb)
        return rows.value

    def query(self, conn_str, sql, set_index=0):
        import pyarrow as pa
        from pyarrow.cffi import ffi
        c = self.ctypes
        stream = ffi.new("struct ArrowArrayStream*")
        addr = int(ffi.cast("uintptr_t", stream))
        eb = c.create_string_buffer(2048)
        self._check(self.lib.dftest_mssql_query(conn_str.encode(), sql.encode(), set_index, c.c_void_p(addr), eb, 2048), eb)
        return pa.RecordBatchReader._import_from_c(addr).read_all()

    def connect_info(self, conn_str):
        c = self.ctypes
        ib, eb = c.create_string_buffer(512), c.create_string_buffer(2048)
        self._check(self.lib.dftest_mssql_connect_info(conn_str.encode(), ib, 512, eb, 2048), eb)
        return dict(kv.split("=", 1) for kv in ib.value.decode().split(";"))

    def bulk_load(self, conn_str, table, columns, data, options=""):
        """Loads a pyarrow Table/RecordBatchReader; columns = "name type [NOT NULL];..."."""
        import pyarrow as pa
        from pyarrow.cffi import ffi
        c = self.ctypes
        reader = data if isinstance(data, pa.RecordBatchReader) else pa.RecordBatchReader.from_batches(data.schema, data.to_batches())
        stream = ffi.new("struct ArrowArrayStream*")
        addr = int(ffi.cast("uintptr_t", stream))
        reader._export_to_c(addr)
        rows, eb = c.c_int64(), c.create_string_buffer(2048)
        try:
            self._check(self.lib.dftest_mssql_bulk_load(conn_str.encode(), table.encode(), columns.encode(), options.encode(),
                                                        c.c_void_p(addr), c.byref(rows), eb, 2048), eb)
        finally:
            if stream.release != ffi.NULL:
                stream.release(stream)
        return rows.value

    def session(self, conn_str, batches):
        """Runs batches on one connection; returns [(rows, in_transaction)]."""
        c = self.ctypes
        out, eb = c.create_string_buffer(4096), c.create_string_buffer(2048)
        self._check(self.lib.dftest_mssql_session(conn_str.encode(), "\n;;\n".join(batches).encode(), out, 4096, eb, 2048), eb)
        return [tuple(int(x) for x in item.split(",")) for item in out.value.decode().split(";") if item]


def pytds_connect(peer, **kw):
    import pytds
    args = dict(dsn=peer.host, port=peer.port, user=USER, password=PASSWORD, database="master", autocommit=True)
    args.update(kw)
    return pytds.connect(**args)


def peer_rows(peer, sql):
    """Runs one query through python-tds (an independent client) and returns its rows as tuples."""
    conn = pytds_connect(peer)
    try:
        cur = conn.cursor()
        cur.execute(sql)
        return [tuple(r) for r in cur.fetchall()]
    finally:
        conn.close()


def peer_exec(peer, *statements):
    """Runs statements through python-tds (autocommit)."""
    conn = pytds_connect(peer)
    try:
        cur = conn.cursor()
        for sql in statements:
            cur.execute(sql)
    finally:
        conn.close()


def peer_tables(peer, schema="dbo"):
    """User table names of a schema, sorted."""
    return sorted(r[0] for r in peer_rows(
        peer, f"SELECT t.name FROM sys.tables AS t INNER JOIN sys.schemas AS s ON s.schema_id = t.schema_id "
              f"WHERE s.name = N'{schema}'"))
