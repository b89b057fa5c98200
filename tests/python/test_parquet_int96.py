"""INT96 timestamps read as timestamp(us) over their whole range.

INT96 (Julian day + nanoseconds of day) values before 1677-09-21 or after
2262-04-11 do not fit int64 nanoseconds; they used to wrap.  They are read
as microseconds, sub-microsecond digits floored.  The oracle is pyarrow
with coerce_int96_timestamp_unit="us".  pyarrow writes in-range INT96 (plain
and dictionary pages); values outside the nanosecond range are crafted by
hand (tests/parquet_craft.py)."""

import datetime
import struct

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

import parquet_craft as pc  # noqa: E402
from dfhelpers import arrow_stream_from_c, parquet_read_ex  # noqa: E402

JULIAN_EPOCH = 2440588


@pytest.fixture(scope="module")
def read(dftest):
    fn = parquet_read_ex(dftest)
    return lambda path: arrow_stream_from_c(fn, str(path).encode(), None, None, None, 3, 0, 0).read_all()


def int96(julian_day, nanos_of_day):
    return struct.pack("<qI", nanos_of_day, julian_day)


def julian(y, m, d):
    return (datetime.date(y, m, d) - datetime.date(1970, 1, 1)).days + JULIAN_EPOCH


NS_PER_DAY = 86_400 * 10**9

# (Julian day, nanoseconds of day); None is a null.
VALUES = [
    (julian(1, 1, 1), 0),                                   # the first day of the proleptic calendar
    (julian(1000, 6, 15), 45_296_789_012_345),              # 12:34:56.789012345, before 1677
    (julian(1677, 9, 21), 743_145_224_191),                 # just below the smallest int64 nanosecond
    None,
    (JULIAN_EPOCH - 1, NS_PER_DAY - 1),                     # 1969-12-31 23:59:59.999999999: floors to ...999
    (JULIAN_EPOCH, 0),
    (julian(2262, 4, 12), 1),                               # just past the largest int64 nanosecond
    (julian(3000, 1, 1), 999),                              # sub-microsecond digits dropped
    (julian(9999, 12, 31), NS_PER_DAY - 1),
    (1, 0),                                                 # Julian day 1: 4714 BC (proleptic Gregorian)
    (JULIAN_EPOCH + 100_000_000, 123_456_789),              # about 273,800 years from now, still int64 us
]


def craft(path, values):
    present = [v for v in values if v is not None]
    schema = [pc.element("schema", children=1), pc.element("ts", pc.OPTIONAL, physical=pc.INT96)]
    column = {"path": ["ts"], "type": pc.INT96, "max_rep": 0, "max_def": 1,
              "def": [0 if v is None else 1 for v in values], "values": [int96(*v) for v in present]}
    pc.write(path, schema, [column], len(values))


def expected_micros(v):
    if v is None:
        return None
    day, nanos = v
    return (day - JULIAN_EPOCH) * 86_400_000_000 + nanos // 1000


def test_int96_outside_the_nanosecond_range_reads_as_pyarrow_reads_microseconds(read, tmp_path):
    path = tmp_path / "int96.parquet"
    craft(path, VALUES)
    theirs = pq.read_table(path, coerce_int96_timestamp_unit="us")
    ours = read(path)
    assert ours.schema.field("ts").type == theirs.schema.field("ts").type == pa.timestamp("us")
    got = ours.column("ts").cast(pa.int64()).to_pylist()
    assert got == theirs.column("ts").cast(pa.int64()).to_pylist()
    assert got == [expected_micros(v) for v in VALUES]


def test_int96_written_by_pyarrow_plain_and_dictionary(read, tmp_path):
    base = datetime.datetime(1700, 1, 1)
    stamps = [base + datetime.timedelta(days=397 * i, microseconds=7 * i) for i in range(400)]
    stamps += [None, stamps[3], stamps[3]]
    table = pa.table({"ts": pa.array(stamps, pa.timestamp("us"))})
    for dictionary in (False, True):
        path = tmp_path / f"pyarrow_{dictionary}.parquet"
        pq.write_table(table, path, use_deprecated_int96_timestamps=True, use_dictionary=dictionary,
                       data_page_size=512)
        assert pq.ParquetFile(path).schema.column(0).physical_type == "INT96"
        theirs = pq.read_table(path, coerce_int96_timestamp_unit="us")
        ours = read(path)
        assert ours.schema.field("ts").type == pa.timestamp("us")
        assert ours.column("ts").to_pylist() == theirs.column("ts").to_pylist() == stamps


def test_int96_beyond_int64_microseconds_is_an_error_not_a_wrap(read, tmp_path):
    from dfhelpers import DfTestError
    path = tmp_path / "far.parquet"
    craft(path, [(JULIAN_EPOCH, 0), (2**32 - 1, 0)])
    with pytest.raises((DfTestError, OSError), match="outside the range of timestamp"):
        read(path)


def test_julian_day_zero_is_a_day_like_any_other(read, tmp_path):
    # pyarrow reads Julian day 0 as the epoch whatever its nanoseconds; it is a day of the calendar, 4714 BC.
    path = tmp_path / "day0.parquet"
    craft(path, [(0, 5000), (1, 0)])
    got = read(path).column("ts").cast(pa.int64()).to_pylist()
    assert got == [expected_micros((0, 5000)), expected_micros((1, 0))]
    assert got[1] - got[0] == 86_400_000_000 - 5
