"""Helpers for tests that call libdftest through ctypes (import as
`from dfhelpers import arrow_stream_from_c, DfTestError`)."""

import ctypes

def arrow_stream_from_c(fn, *args):
    """Calls fn(*args, stream_ptr, errbuf, errlen) and imports the Arrow C
    stream it fills into a pyarrow.RecordBatchReader.  Raises DfTestError on
    a nonzero return."""
    import pyarrow as pa
    from pyarrow.cffi import ffi

    stream = ffi.new("struct ArrowArrayStream*")
    errbuf = ctypes.create_string_buffer(1024)
    addr = int(ffi.cast("uintptr_t", stream))
    rc = fn(*args, ctypes.c_void_p(addr), errbuf, ctypes.c_size_t(len(errbuf)))
    if rc != 0:
        raise DfTestError(rc, errbuf.value.decode("utf-8", "replace"))
    return pa.RecordBatchReader._import_from_c(addr)


def parquet_read_ex(dftest):
    """libdftest's dftest_parquet_read_ex with its ctypes signature: (path,
    leaves_csv, columns, predicate, threads, batch_size, skip_crc, stream,
    errbuf, errlen); call it through arrow_stream_from_c."""
    fn = dftest.dftest_parquet_read_ex
    fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                   ctypes.c_int64, ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    fn.restype = ctypes.c_int
    return fn


class DfTestError(Exception):
    def __init__(self, code, message):
        super().__init__(f"[{code}] {message}")
        self.code = code
        self.message = message


class SqlEngine:
    """A libdftest catalog: Arrow tables registered by name, queries run
    into pyarrow tables (raises DfTestError with "kind|offset|message")."""

    def __init__(self, lib):
        self.lib = lib
        lib.dfsql_catalog_new.restype = ctypes.c_void_p
        lib.dfsql_catalog_free.argtypes = [ctypes.c_void_p]
        lib.dfsql_register_stream.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_char_p,
                                              ctypes.c_size_t]
        lib.dfsql_query.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p,
                                    ctypes.c_char_p, ctypes.c_size_t]
        self.cat = lib.dfsql_catalog_new()

    def register(self, name, table, batch_rows):
        import pyarrow as pa
        from pyarrow.cffi import ffi
        stream = ffi.new("struct ArrowArrayStream*")
        addr = int(ffi.cast("uintptr_t", stream))
        pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=batch_rows))._export_to_c(addr)
        err = ctypes.create_string_buffer(1024)
        rc = self.lib.dfsql_register_stream(ctypes.c_void_p(self.cat), name.encode(), ctypes.c_void_p(addr), err, 1024)
        if rc != 0:
            raise DfTestError(rc, err.value.decode("utf-8", "replace"))

    def query(self, sql, partitions, batch_size):
        reader = arrow_stream_from_c(self.lib.dfsql_query, ctypes.c_void_p(self.cat), sql.encode(), partitions,
                                     batch_size)
        return reader.read_all()

    def close(self):
        self.lib.dfsql_catalog_free(self.cat)
