"""Preview formatting of every Arrow type, compared with what the reference
implementation prints for the same values (expected strings were captured
from it).  Data is built with pyarrow and formatted through the same code
path as previews (deltafunnel._native._format_arrow)."""

import datetime
import decimal
import re
import struct

import pytest

pa = pytest.importorskip("pyarrow")

from deltafunnel import _native


def fmt(table, max_rows=-1):
    return _native._format_arrow(table, max_rows)


FLOATS = [0.1, 1.0, -0.0, 1e-7, 123456789.0, 1.5e300, float("inf"), float("-inf"), 3.141592653589793, 1e16, 1e15,
          123456789012345680.0, 2.5e-5, 0.001, None]


def mixed_types_table():
    n = len(FLOATS)
    return pa.table({
        "f64": pa.array(FLOATS, pa.float64()),
        "f32": pa.array(FLOATS, pa.float32()),
        "i8": pa.array([(i * 37) % 256 - 128 for i in range(n)], pa.int8()),
        "i16": pa.array([-32768 + i for i in range(n)], pa.int16()),
        "i32": pa.array([2**31 - 1 - i for i in range(n)], pa.int32()),
        "dec": pa.array([decimal.Decimal("-0.01"), decimal.Decimal("12345678901234567890.123456789012345678")]
                        + [decimal.Decimal(i) for i in range(n - 2)], pa.decimal128(38, 18)),
        "dec0": pa.array([decimal.Decimal(i * 1000) for i in range(n)], pa.decimal128(5, 0)),
        "tsntz": pa.array([datetime.datetime(1, 1, 1), datetime.datetime(9999, 12, 31, 23, 59, 59, 999999)]
                          + [datetime.datetime(2020, 1, 1, 0, 0, i) for i in range(n - 2)], pa.timestamp("us")),
        "arr": pa.array([[1, 2, None], [], None] + [[i] for i in range(n - 3)], pa.list_(pa.int32())),
        "st": pa.array([{"a": 1, "b": "x"}, None, {"a": None, "b": None}]
                       + [{"a": i, "b": str(i)} for i in range(n - 3)],
                       pa.struct([("a", pa.int32()), ("b", pa.string())])),
        "mp": pa.array([[("k1", 1), ("k2", None)], None, []] + [[("k", i)] for i in range(n - 3)],
                       pa.map_(pa.string(), pa.int64())),
        "s": pa.array(["tab\there", "new\nline", "long" * 10, "émoji😀", "", " lead", "trail ", "a|b", None, "x", "y",
                       "z", "w", "q", "r"]),
    })


MIXED_TEXT = '+-----------------------+--------------+------+--------+------------+-----------------------------------------+-------+----------------------------+----------+----------------+---------------+------------------------------------------+\n| f64                   | f32          | i8   | i16    | i32        | dec                                     | dec0  | tsntz                      | arr      | st             | mp            | s                                        |\n+-----------------------+--------------+------+--------+------------+-----------------------------------------+-------+----------------------------+----------+----------------+---------------+------------------------------------------+\n| 0.1                   | 0.1          | -128 | -32768 | 2147483647 | -0.010000000000000000                   | 0     | 0001-01-01T00:00:00        | [1, 2, ] | {a: 1, b: x}   | {k1: 1, k2: } | tab\there                                 |\n| 1.0                   | 1.0          | -91  | -32767 | 2147483646 | 12345678901234567890.123456789012345678 | 1000  | 9999-12-31T23:59:59.999999 | []       |                |               | new                                      |\n|                       |              |      |        |            |                                         |       |                            |          |                |               | line                                     |\n| -0.0                  | -0.0         | -54  | -32766 | 2147483645 | 0.000000000000000000                    | 2000  | 2020-01-01T00:00:00        |          | {a: , b: }     | {}            | longlonglonglonglonglonglonglonglonglong |\n| 1e-7                  | 1e-7         | -17  | -32765 | 2147483644 | 1.000000000000000000                    | 3000  | 2020-01-01T00:00:01        | [0]      | {a: 0, b: 0}   | {k: 0}        | émoji😀                                  |\n| 123456789.0           | 123456790.0  | 20   | -32764 | 2147483643 | 2.000000000000000000                    | 4000  | 2020-01-01T00:00:02        | [1]      | {a: 1, b: 1}   | {k: 1}        |                                          |\n| 1.5e300               | inf          | 57   | -32763 | 2147483642 | 3.000000000000000000                    | 5000  | 2020-01-01T00:00:03        | [2]      | {a: 2, b: 2}   | {k: 2}        |  lead                                    |\n| inf                   | inf          | 94   | -32762 | 2147483641 | 4.000000000000000000                    | 6000  | 2020-01-01T00:00:04        | [3]      | {a: 3, b: 3}   | {k: 3}        | trail                                    |\n| -inf                  | -inf         | -125 | -32761 | 2147483640 | 5.000000000000000000                    | 7000  | 2020-01-01T00:00:05        | [4]      | {a: 4, b: 4}   | {k: 4}        | a|b                                      |\n| 3.141592653589793     | 3.1415927    | -88  | -32760 | 2147483639 | 6.000000000000000000                    | 8000  | 2020-01-01T00:00:06        | [5]      | {a: 5, b: 5}   | {k: 5}        |                                          |\n| 1e16                  | 1e16         | -51  | -32759 | 2147483638 | 7.000000000000000000                    | 9000  | 2020-01-01T00:00:07        | [6]      | {a: 6, b: 6}   | {k: 6}        | x                                        |\n| 1000000000000000.0    | 1e15         | -14  | -32758 | 2147483637 | 8.000000000000000000                    | 10000 | 2020-01-01T00:00:08        | [7]      | {a: 7, b: 7}   | {k: 7}        | y                                        |\n| 1.2345678901234568e17 | 1.2345679e17 | 23   | -32757 | 2147483636 | 9.000000000000000000                    | 11000 | 2020-01-01T00:00:09        | [8]      | {a: 8, b: 8}   | {k: 8}        | z                                        |\n| 0.000025              | 0.000025     | 60   | -32756 | 2147483635 | 10.000000000000000000                   | 12000 | 2020-01-01T00:00:10        | [9]      | {a: 9, b: 9}   | {k: 9}        | w                                        |\n| 0.001                 | 0.001        | 97   | -32755 | 2147483634 | 11.000000000000000000                   | 13000 | 2020-01-01T00:00:11        | [10]     | {a: 10, b: 10} | {k: 10}       | q                                        |\n|                       |              | -122 | -32754 | 2147483633 | 12.000000000000000000                   | 14000 | 2020-01-01T00:00:12        | [11]     | {a: 11, b: 11} | {k: 11}       | r                                        |\n+-----------------------+--------------+------+--------+------------+-----------------------------------------+-------+----------------------------+----------+----------------+---------------+------------------------------------------+'

MIXED_CELLS = ['<td class="df-num">0.1</td>', '<td class="df-num">0.1</td>', '<td class="df-num">-128</td>', '<td class="df-num">-32768</td>', '<td class="df-num">2147483647</td>', '<td class="df-num">-0.010000000000000000</td>', '<td class="df-num">0</td>', '<td>0001-01-01T00:00:00</td>', '<td>[1, 2, null]</td>', '<td>{a: 1, b: x}</td>', '<td>{k1: 1, k2: null}</td>', '<td>tab\there</td>', '<td class="df-num">1.0</td>', '<td class="df-num">1.0</td>', '<td class="df-num">-91</td>', '<td class="df-num">-32767</td>', '<td class="df-num">2147483646</td>', '<td class="df-num">12345678901234567890.123456789012345678</td>', '<td class="df-num">1000</td>', '<td>9999-12-31T23:59:59.999999</td>', '<td>[]</td>', '<td>null</td>', '<td>null</td>', '<td>new\nline</td>', '<td class="df-num">-0.0</td>', '<td class="df-num">-0.0</td>', '<td class="df-num">-54</td>', '<td class="df-num">-32766</td>', '<td class="df-num">2147483645</td>', '<td class="df-num">0.000000000000000000</td>', '<td class="df-num">2000</td>', '<td>2020-01-01T00:00:00</td>', '<td>null</td>', '<td>{a: null, b: null}</td>', '<td>{}</td>', '<td>longlonglonglonglonglonglonglonglonglong</td>', '<td class="df-num">1e-7</td>', '<td class="df-num">1e-7</td>', '<td class="df-num">-17</td>', '<td class="df-num">-32765</td>', '<td class="df-num">2147483644</td>', '<td class="df-num">1.000000000000000000</td>', '<td class="df-num">3000</td>', '<td>2020-01-01T00:00:01</td>', '<td>[0]</td>', '<td>{a: 0, b: 0}</td>', '<td>{k: 0}</td>', '<td>émoji😀</td>', '<td class="df-num">123456789.0</td>', '<td class="df-num">123456790.0</td>', '<td class="df-num">20</td>', '<td class="df-num">-32764</td>', '<td class="df-num">2147483643</td>', '<td class="df-num">2.000000000000000000</td>', '<td class="df-num">4000</td>', '<td>2020-01-01T00:00:02</td>', '<td>[1]</td>', '<td>{a: 1, b: 1}</td>', '<td>{k: 1}</td>', '<td></td>', '<td class="df-num">1.5e300</td>', '<td class="df-num">inf</td>', '<td class="df-num">57</td>', '<td class="df-num">-32763</td>', '<td class="df-num">2147483642</td>', '<td class="df-num">3.000000000000000000</td>', '<td class="df-num">5000</td>', '<td>2020-01-01T00:00:03</td>', '<td>[2]</td>', '<td>{a: 2, b: 2}</td>', '<td>{k: 2}</td>', '<td> lead</td>', '<td class="df-num">inf</td>', '<td class="df-num">inf</td>', '<td class="df-num">94</td>', '<td class="df-num">-32762</td>', '<td class="df-num">2147483641</td>', '<td class="df-num">4.000000000000000000</td>', '<td class="df-num">6000</td>', '<td>2020-01-01T00:00:04</td>', '<td>[3]</td>', '<td>{a: 3, b: 3}</td>', '<td>{k: 3}</td>', '<td>trail </td>', '<td class="df-num">-inf</td>', '<td class="df-num">-inf</td>', '<td class="df-num">-125</td>', '<td class="df-num">-32761</td>', '<td class="df-num">2147483640</td>', '<td class="df-num">5.000000000000000000</td>', '<td class="df-num">7000</td>', '<td>2020-01-01T00:00:05</td>', '<td>[4]</td>', '<td>{a: 4, b: 4}</td>', '<td>{k: 4}</td>', '<td>a|b</td>', '<td class="df-num">3.141592653589793</td>', '<td class="df-num">3.1415927</td>', '<td class="df-num">-88</td>', '<td class="df-num">-32760</td>', '<td class="df-num">2147483639</td>', '<td class="df-num">6.000000000000000000</td>', '<td class="df-num">8000</td>', '<td>2020-01-01T00:00:06</td>', '<td>[5]</td>', '<td>{a: 5, b: 5}</td>', '<td>{k: 5}</td>', '<td>null</td>', '<td class="df-num">1e16</td>', '<td class="df-num">1e16</td>', '<td class="df-num">-51</td>', '<td class="df-num">-32759</td>', '<td class="df-num">2147483638</td>', '<td class="df-num">7.000000000000000000</td>', '<td class="df-num">9000</td>', '<td>2020-01-01T00:00:07</td>', '<td>[6]</td>', '<td>{a: 6, b: 6}</td>', '<td>{k: 6}</td>', '<td>x</td>', '<td class="df-num">1000000000000000.0</td>', '<td class="df-num">1e15</td>', '<td class="df-num">-14</td>', '<td class="df-num">-32758</td>', '<td class="df-num">2147483637</td>', '<td class="df-num">8.000000000000000000</td>', '<td class="df-num">10000</td>', '<td>2020-01-01T00:00:08</td>', '<td>[7]</td>', '<td>{a: 7, b: 7}</td>', '<td>{k: 7}</td>', '<td>y</td>', '<td class="df-num">1.2345678901234568e17</td>', '<td class="df-num">1.2345679e17</td>', '<td class="df-num">23</td>', '<td class="df-num">-32757</td>', '<td class="df-num">2147483636</td>', '<td class="df-num">9.000000000000000000</td>', '<td class="df-num">11000</td>', '<td>2020-01-01T00:00:09</td>', '<td>[8]</td>', '<td>{a: 8, b: 8}</td>', '<td>{k: 8}</td>', '<td>z</td>', '<td class="df-num">0.000025</td>', '<td class="df-num">0.000025</td>', '<td class="df-num">60</td>', '<td class="df-num">-32756</td>', '<td class="df-num">2147483635</td>', '<td class="df-num">10.000000000000000000</td>', '<td class="df-num">12000</td>', '<td>2020-01-01T00:00:10</td>', '<td>[9]</td>', '<td>{a: 9, b: 9}</td>', '<td>{k: 9}</td>', '<td>w</td>', '<td class="df-num">0.001</td>', '<td class="df-num">0.001</td>', '<td class="df-num">97</td>', '<td class="df-num">-32755</td>', '<td class="df-num">2147483634</td>', '<td class="df-num">11.000000000000000000</td>', '<td class="df-num">13000</td>', '<td>2020-01-01T00:00:11</td>', '<td>[10]</td>', '<td>{a: 10, b: 10}</td>', '<td>{k: 10}</td>', '<td>q</td>', '<td class="df-num">null</td>', '<td class="df-num">null</td>', '<td class="df-num">-122</td>', '<td class="df-num">-32754</td>', '<td class="df-num">2147483633</td>', '<td class="df-num">12.000000000000000000</td>', '<td class="df-num">14000</td>', '<td>2020-01-01T00:00:12</td>', '<td>[11]</td>', '<td>{a: 11, b: 11}</td>', '<td>{k: 11}</td>', '<td>r</td>']

WIDTH_VALUES = ["x" * 12, "tab\there", "a\u0301b", "😀", "中文", "\u200b", "e\u0000f", "\u00ad", "\x1b[1m", "a\r\nb",
                "\u2028", "ｱ", "\U0001F1FA\U0001F1F8", "👍🏽", "\u0a00x", "\ufe0f", "\u3000", "\u1100", "\ud7b0"]

WIDTH_TEXT = '+--------------+\n| s            |\n+--------------+\n| xxxxxxxxxxxx |\n| tab\there     |\n| áb           |\n| 😀           |\n| 中文         |\n| \u200b             |\n| e\x00f          |\n| \xad             |\n| \x1b[1m         |\n| a\r           |\n| b            |\n| \u2028            |\n| ｱ            |\n| 🇺🇸           |\n| 👍🏽           |\n| \u0a00x           |\n| ️             |\n| \u3000           |\n| ᄀ           |\n| ힰ             |\n+--------------+'

TEMPORAL_TEXT = """\
+-------------------------+----------------------------------+-------------------------------+---------------------------+
| d64                     | tsz                              | tny                           | tneg                      |
+-------------------------+----------------------------------+-------------------------------+---------------------------+
| 2024-01-02T03:04:05.123 | 2024-01-02T05:04:05.123456+02:00 | 2024-01-01T22:04:05.123-05:00 | 2024-01-01T21:34:05-05:30 |
|                         |                                  |                               |                           |
| 1969-12-31T23:59:59.001 | 1970-01-01T01:59:59.000001+02:00 | 1969-12-31T18:59:59.001-05:00 | 1969-12-31T18:30:00-05:30 |
| 2000-02-29T00:00:00     | 2000-02-29T02:00:00+02:00        | 2000-02-28T19:00:00-05:00     | 2000-02-28T18:30:00-05:30 |
+-------------------------+----------------------------------+-------------------------------+---------------------------+"""


def test_every_common_type_renders_like_the_reference():
    text, html = fmt(mixed_types_table())
    assert text == MIXED_TEXT
    assert re.findall(r"<td[^>]*>.*?</td>", html, re.S) == MIXED_CELLS


def test_cell_widths_count_terminal_columns():
    text, _ = fmt(pa.table({"s": pa.array(WIDTH_VALUES)}))
    assert text == WIDTH_TEXT


def test_max_rows_limits_output():
    text, html = fmt(mixed_types_table(), 2)
    assert text.count("\n") == 6   # the second row's "new\nline" takes two lines
    assert "Showing <b>2</b> rows, <b>12</b> columns." in html
    assert fmt(mixed_types_table(), 0)[0] == "++\n++"


def test_temporal_types_render_like_the_reference():
    table = pa.table({
        "d64": pa.array([1704164645123, None, -999, 951782400000], pa.date64()),
        "tsz": pa.array([1704164645123456000, None, -999999000, 951782400000000000], pa.timestamp("ns", tz="+02:00")),
        "tny": pa.array([1704164645123, None, -999, 951782400000], pa.timestamp("ms", tz="America/New_York")),
        "tneg": pa.array([1704164645, None, 0, 951782400], pa.timestamp("s", tz="-05:30")),
    })
    text, _ = fmt(table)
    assert text == TEMPORAL_TEXT


def test_times_durations_intervals_and_binary():
    table = pa.table({
        "t32": pa.array([3723], pa.time32("s")),
        "t64": pa.array([3723123456789], pa.time64("ns")),
        "t64u": pa.array([3723123000], pa.time64("us")),
        "du": pa.array([1234567], pa.duration("ms")),
        "neg": pa.array([-1500], pa.duration("ms")),
        "zero": pa.array([0], pa.duration("s")),
        "iv": pa.array([pa.MonthDayNano([1, 2, 3 * 3600 * 10**9])], pa.month_day_nano_interval()),
        "u": pa.array([18446744073709551615], pa.uint64()),
        "h": pa.Array.from_buffers(pa.float16(), 1, [None, pa.py_buffer(struct.pack("<H", 0x3E00))]),
        "fb": pa.array([b"\x00\xff"], pa.binary(2)),
    })
    text, html = fmt(table)
    lines = text.split("\n")
    cells = [c.strip() for c in lines[3].split("|")[1:-1]]
    assert cells == ["01:02:03", "01:02:03.123456789", "01:02:03.123", "PT1234.567S", "-PT1.5S", "P0D",
                     "1 mons 2 days 3 hours", "18446744073709551615", "1.5", "00ff"]
    assert '<td class="df-num">18446744073709551615</td>' in html
    assert '<td class="df-num">1.5</td>' in html


def test_html_escapes_names_and_values():
    table = pa.table({"a<b": pa.array(["<x>&\"'"]), "n": pa.array([None], pa.int32())})
    _, html = fmt(table)
    assert "<span>a&lt;b</span>" in html
    assert "<td>&lt;x&gt;&amp;&quot;&#39;</td>" in html
    assert '<td class="df-num">null</td>' in html
