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


class DfTestError(Exception):
    def __init__(self, code, message):
        super().__init__(f"[{code}] {message}")
        self.code = code
        self.message = message
