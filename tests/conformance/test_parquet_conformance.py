"""Parquet reader conformance on apache/parquet-testing (the shared corpus).

- Every file pyarrow reads decodes to the same Arrow data as pyarrow
  (`pq.read_table`, INT96 as microseconds, extension types compared by
  storage, NaN equal to NaN),
  unless it is listed in DOCUMENTED below with the behaviour we check instead.
  The decode-equal rate over those files must be at least 90 %.
- Files pyarrow rejects, `bad_data/` files and encrypted files give an error.
- Hostile variants of every file (truncated at several offsets, footer
  replaced by garbage, page headers overwritten) give an error; random page
  header and page byte corruption gives an error or values.  These run in a
  child process per file, so a crash fails one test instead of the session;
  memory errors are caught by the C unit test `parquet_hostile_corpus`,
  which replays the same mutations under the ASan/UBSan build.
"""

import ctypes
import json
import math
import re
import os
import pathlib
import random
import subprocess
import sys

def _child(spec_path):
    """Applies each mutation to a copy of the file and drains it with our reader."""
    spec = json.loads(pathlib.Path(spec_path).read_text())
    lib = ctypes.CDLL(spec["lib"])
    drain = lib.dftest_parquet_scan_metrics
    drain.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int64, ctypes.POINTER(ctypes.c_int64),
                      ctypes.c_char_p, ctypes.c_size_t]
    drain.restype = ctypes.c_int
    data = pathlib.Path(spec["path"]).read_bytes()
    target = pathlib.Path(spec["tmp"]) / "mutated.parquet"
    results = []
    for name, kind, offset, patch, must_fail in spec["mutations"]:
        if kind == "truncate":
            mutated = data[:offset]
        else:
            raw = bytes.fromhex(patch)
            mutated = data[:offset] + raw + data[offset + len(raw):]
        target.write_bytes(mutated)
        print(f"trying {name}", file=sys.stderr, flush=True)
        metrics = (ctypes.c_int64 * 6)()
        err = ctypes.create_string_buffer(512)
        rc = drain(str(target).encode(), 97, 0, metrics, err, len(err))
        results.append({"name": name, "rc": rc, "must_fail": must_fail, "error": err.value.decode(errors="replace")})
    print(json.dumps(results))


if __name__ == "__main__" and len(sys.argv) == 3 and sys.argv[1] == "--child":
    # Child mode (see test_hostile_variants_fail_cleanly): needs only ctypes and libdftest.
    _child(sys.argv[2])
    sys.exit(0)

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from dfhelpers import DfTestError, arrow_stream_from_c, parquet_read_ex  # noqa: E402

# Files whose expected behaviour is not "decode like pyarrow", and why.
DOCUMENTED = {
    # We verify page CRCs (pyarrow does not by default); the first page's CRC is wrong on
    # purpose, so the read must fail with checksum_mismatch.  With CRC checks off it decodes
    # like pyarrow (checked too).
    "datapage_v1-corrupt-checksum.parquet": "checksum_mismatch",
    # A MAP whose key field is OPTIONAL (written by Presto/Trino).  pyarrow rejects it ("Map keys
    # must be annotated as required"); LogicalTypes.md asks readers to accept it, and Delta
    # checkpoints from such writers need it.  We compare with the values upstream lists.
    "incorrect_map_schema.parquet": "accept_optional_map_keys",
    # In bad_data/ because it crashed older Arrow readers: the dictionary has one entry and the
    # index run uses bit width 0, which is valid (every index is 0).  pyarrow 26 and DuckDB read
    # it; so do we, with the same values.
    "bad_data/ARROW-GH-43605.parquet": "valid_despite_bad_data",
}

# Files pyarrow reads that we do not yet decode identically: none.  Add entries as
# {"relative/path.parquet": "reason"}; they count against the rate.
KNOWN_FAILURES = {}

MIN_EQUAL_RATE = 0.90


def corpus_root(testdata):
    root = testdata / "parquet-testing"
    if not root.is_dir():
        pytest.skip("parquet-testing corpus is not present in the shared test data")
    return root


def all_parquet_files():
    """Relative paths of the corpus files, found the way the `testdata` fixture finds the corpus."""
    env = os.environ.get("DF_SHARED_TESTDATA")
    base = pathlib.Path(env) if env else pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "testdata"
    root = base / "parquet-testing"
    if not root.is_dir():
        return []
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.parquet"))


FILES = all_parquet_files()


@pytest.fixture(scope="module")
def read_fn(dftest):
    fn = parquet_read_ex(dftest)
    return fn


def read_ours(read_fn, path, batch_size=8192, skip_crc=False):
    """Our reader as a pyarrow Table; raises DfTestError (open) or OSError (read)."""
    reader = arrow_stream_from_c(read_fn, str(path).encode(), None, None, None, batch_size, 0, int(skip_crc))
    return reader.read_all()


def read_pyarrow(path):
    try:
        # INT96 reads as microseconds (nanoseconds wrap outside 1677..2262), as pyarrow reads it when asked.
        return pq.read_table(path, use_threads=False, coerce_int96_timestamp_unit="us")
    except Exception:  # noqa: BLE001 - any rejection counts
        return None


def error_kind(exc):
    """The df_errkind name of a reader error ("kind: message", or "[phase/kind] message"
    as the Arrow stream reports it to pyarrow)."""
    text = exc.message if isinstance(exc, DfTestError) else str(exc)
    tagged = re.match(r"\s*\[[a-z_]+/([a-z_]+)\]", text)
    if tagged:
        return tagged.group(1)
    text = text.split("/", 1)[-1] if "/" in text.split(":", 1)[0] else text
    return text.split(":", 1)[0].strip()


def _storage(col):
    col = col.combine_chunks() if col.num_chunks else pa.array([], type=col.type)
    return col.storage if isinstance(col.type, pa.ExtensionType) else col


def _py_equal(a, b):
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_py_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_py_equal(x, y) for x, y in zip(a, b))
    return a == b


def difference(ours, theirs):
    """None when the tables hold the same data, else a description of the first difference."""
    if ours.num_rows != theirs.num_rows:
        return f"{ours.num_rows} rows, pyarrow {theirs.num_rows}"
    if ours.schema.names != theirs.schema.names:
        return f"columns {ours.schema.names}, pyarrow {theirs.schema.names}"
    for name, a, b in zip(ours.schema.names, ours.columns, theirs.columns):
        a, b = _storage(a), _storage(b)
        if a.type != b.type:
            return f"column {name}: type {a.type}, pyarrow {b.type}"
        if not a.equals(b) and not _py_equal(a.to_pylist(), b.to_pylist()):
            return f"column {name}: values differ"
    return None


@pytest.mark.parametrize("rel", FILES)
def test_file_behaves_as_documented(testdata, read_fn, rel):
    root = corpus_root(testdata)
    path = root / rel
    if rel in KNOWN_FAILURES:
        pytest.xfail(KNOWN_FAILURES[rel])
    theirs = read_pyarrow(path)
    documented = DOCUMENTED.get(rel)
    if documented == "checksum_mismatch":
        with pytest.raises((DfTestError, OSError)) as info:
            read_ours(read_fn, path)
        assert error_kind(info.value) == "checksum_mismatch", str(info.value)
        assert difference(read_ours(read_fn, path, skip_crc=True), theirs) is None
        return
    if documented == "accept_optional_map_keys":
        assert theirs is None, "pyarrow started accepting optional map keys: compare normally"
        ours = read_ours(read_fn, path)
        assert ours.to_pylist() == [{"my_map": [("parent", "another"), ("name", "report")]}]
        return
    if theirs is None or (rel.startswith("bad_data/") and documented is None):
        with pytest.raises((DfTestError, OSError)) as info:
            read_ours(read_fn, path)
        kind = error_kind(info.value)
        assert kind in {"parquet_format", "parquet_unsupported", "codec_error", "checksum_mismatch"}, str(info.value)
        return
    ours = read_ours(read_fn, path)
    assert difference(ours, theirs) is None
    if ours.num_rows <= 50_000:
        # Batches that cut pages and records at odd places must give the same data.
        assert difference(read_ours(read_fn, path, batch_size=7), theirs) is None


def test_decode_equal_rate(testdata, read_fn):
    root = corpus_root(testdata)
    readable, equal, failures = 0, 0, []
    for rel in FILES:
        if rel.startswith("bad_data/") and rel not in DOCUMENTED:
            continue
        theirs = read_pyarrow(root / rel)
        if theirs is None:
            continue
        readable += 1
        try:
            diff = difference(read_ours(read_fn, root / rel), theirs)
        except (DfTestError, OSError) as exc:
            diff = f"error {exc}"
        if diff is None:
            equal += 1
        else:
            failures.append(f"{rel}: {diff}")
    rate = equal / readable if readable else 0.0
    print(f"\nparquet-testing: {equal}/{readable} files pyarrow reads decode equal ({rate:.1%})")
    for line in failures:
        print("  not equal:", line)
    assert readable > 40
    undocumented = [f for f in failures if f.split(":", 1)[0] not in DOCUMENTED and f.split(":", 1)[0] not in KNOWN_FAILURES]
    assert not undocumented
    assert rate >= MIN_EQUAL_RATE


def test_encrypted_files_are_refused(testdata, read_fn):
    root = corpus_root(testdata)
    files = sorted(root.rglob("*.parquet.encrypted"))
    assert files
    for path in files:
        with pytest.raises(DfTestError) as info:
            read_ours(read_fn, path)
        assert error_kind(info.value) == "parquet_unsupported"
        assert "Parquet modular encryption is not supported" in info.value.message


# ---- hostile variants, run in a child process --------------------------------------------


def mutations(path):
    """(name, kind, offset, bytes-hex, must_fail) for one file; kind 'truncate' or 'patch'."""
    data = path.read_bytes()
    n = len(data)
    rng = random.Random(f"{path.name}:{n}")
    out = []
    for cut in sorted({n - 1, n - 5, n - 8, n - 9, n - 20, n // 2, 64, 12, 8, 4, 0}):
        if 0 <= cut < n:
            out.append((f"truncate@{cut}", "truncate", cut, "", True))
    footer_len = int.from_bytes(data[-8:-4], "little") if n >= 12 else 0
    if 0 < footer_len <= n - 12:
        start = n - 8 - footer_len
        garbage = bytes(rng.randrange(256) for _ in range(footer_len))
        out.append(("footer-garbage", "patch", start, garbage.hex(), True))
        out.append(("footer-length-huge", "patch", n - 8, (0x7FFFFFF0).to_bytes(4, "little").hex(), True))
    try:
        meta = pq.ParquetFile(path).metadata
    except Exception:  # noqa: BLE001
        return out
    offsets = set()
    for g in range(meta.num_row_groups):
        for c in range(meta.num_columns):
            col = meta.row_group(g).column(c)
            if col.num_values == 0:
                continue
            for off in (col.dictionary_page_offset, col.data_page_offset):
                if off is not None and 4 <= off < n - 16:
                    offsets.add(off)
    for i, off in enumerate(sorted(offsets)[:6]):
        out.append((f"page-header-ff@{off}", "patch", off, ("ff" * 12), True))
        junk = bytes(rng.randrange(256) for _ in range(12))
        out.append((f"page-header-random@{off}", "patch", off, junk.hex(), False))
        for j in range(3):
            pos = min(n - 9, off + 12 + rng.randrange(64))
            out.append((f"page-bytes@{pos}.{j}", "patch", pos, bytes([rng.randrange(256)]).hex(), False))
    return out


def run_child(lib, path, muts, tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"lib": lib, "path": str(path), "mutations": muts, "tmp": str(tmp_path)}))
    proc = subprocess.run([sys.executable, __file__, "--child", str(spec)], capture_output=True, text=True,
                          timeout=300)
    return proc


@pytest.mark.parametrize("rel", FILES)
def test_hostile_variants_fail_cleanly(testdata, dftest, rel, tmp_path):
    root = corpus_root(testdata)
    path = root / rel
    muts = mutations(path)
    proc = run_child(dftest._name, path, muts, tmp_path)
    assert proc.returncode == 0, f"child crashed (exit {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    unexpected = [r for r in results if r["must_fail"] and r["rc"] == 0]
    assert not unexpected, f"mutations that still read: {unexpected}"
