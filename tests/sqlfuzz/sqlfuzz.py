"""Differential SQL fuzzing: random schemas, data and queries run on our
engine (through libdftest) and on DataFusion (the `datafusion` package,
the dialect we match), plus metamorphic checks on our engine alone.

Generation is seeded and typed: each table has a unique `id` and columns
of integer, float, decimal, string, boolean, date and timestamp types,
filled from pools that favour duplicates (so joins and groups meet) and
the values engines get wrong (NULL, the ends of each integer type, -0.0,
NaN, infinities, decimals at their precision, empty and long strings).
Queries cover projections, filters, aggregates with GROUP BY / HAVING,
joins of every kind, IN / EXISTS subqueries (correlated too), scalar
subqueries, set operations, window functions, DISTINCT, ORDER BY + LIMIT
and casts.

Oracles:
- DataFusion: same tables, same query; results compared as multisets
  (as sequences when the query orders every row).  When DuckDB runs the
  query too and agrees with DataFusion, the report says so.
- TLP (ternary logic partitioning): `Q` equals `Q WHERE p` UNION ALL
  `Q WHERE NOT p` UNION ALL `Q WHERE p IS NULL`.
- NoREC: `count(*) ... WHERE p` equals `count(CASE WHEN p THEN 1 END)`,
  which no optimizer can push into the scan.

A mismatch is one of: `wrong` (both answered, differently), `error`
(we failed where DataFusion answered), `accepted` (DataFusion refused,
we answered), `tlp`, `norec`.  Mismatches matching an entry of
known-differences.json are counted as known.  New ones are reduced (rows
dropped while the mismatch persists) and written as self-contained JSON
cases; cases committed in regressions/ are replayed by the test suite.

Campaign (not part of the test command):
    python tests/sqlfuzz/sqlfuzz.py --seconds 3600 --jobs 2 --out /tmp/sqlfuzz
"""

import argparse
import ctypes
import datetime
import decimal
import json
import math
import os
import pathlib
import random
import re
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from dfhelpers import DfTestError, SqlEngine  # noqa: E402

import pyarrow as pa  # noqa: E402

KNOWN_FILE = HERE / "known-differences.json"
REGRESSION_DIR = HERE / "regressions"

# ---------------------------------------------------------------------------
# Schemas and data

INT_TYPES = {"TINYINT": (pa.int8(), 8), "SMALLINT": (pa.int16(), 16), "INT": (pa.int32(), 32),
             "BIGINT": (pa.int64(), 64)}

LONG_STRING = "x" * 300 + "yz"
STRING_POOL = ["", "a", "A", "ab", "abc", "b", "bee", "Cat", "cat", "dog", " sp ", "é", "ü_ö", "%_", "a%b",
               "NULL", "0", "10", "9", LONG_STRING]


class Column:
    def __init__(self, name, sql_type, cls, arrow_type):
        self.name, self.sql_type, self.cls, self.arrow_type = name, sql_type, cls, arrow_type


def column_types(rng):
    """(sql type, class, arrow type) of a random column."""
    k = rng.choice(["int", "int", "int", "float", "dec", "str", "str", "bool", "date", "ts"])
    if k == "int":
        name = rng.choice(list(INT_TYPES))
        return name, "int", INT_TYPES[name][0]
    if k == "float":
        return ("DOUBLE", "float", pa.float64()) if rng.random() < 0.8 else ("REAL", "float", pa.float32())
    if k == "dec":
        p = rng.choice([5, 10, 18, 38])
        s = rng.choice([0, 2, min(p, 4)])
        return f"DECIMAL({p},{s})", "dec", pa.decimal128(p, s)
    if k == "str":
        return "VARCHAR", "str", pa.string()
    if k == "bool":
        return "BOOLEAN", "bool", pa.bool_()
    if k == "date":
        return "DATE", "date", pa.date32()
    return "TIMESTAMP", "ts", pa.timestamp("us")


def int_value(rng, bits):
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    r = rng.random()
    if r < 0.06:
        return rng.choice([lo, hi, lo + 1, hi - 1])
    if r < 0.7:
        return rng.randint(-3, 9)
    return rng.randint(max(lo, -1000), min(hi, 1000))


def float_value(rng, single):
    r = rng.random()
    if r < 0.1:
        return rng.choice([0.0, -0.0, math.nan, math.inf, -math.inf, 1.5, -2.25])
    if r < 0.6:
        return float(rng.randint(-5, 9)) / rng.choice([1, 2, 4])
    v = rng.uniform(-1e4, 1e4)
    return float(pa.scalar(v, pa.float32()).as_py()) if single else v


def dec_value(rng, p, s):
    r = rng.random()
    top = 10**p - 1
    if r < 0.06:
        digits = rng.choice([top, -top, 0, 1, -1])
    elif r < 0.6:
        digits = rng.randint(-5, 9) * 10**s
    else:
        digits = rng.randint(-min(top, 10**6), min(top, 10**6))
    return decimal.Decimal(digits).scaleb(-s, decimal.Context(prec=80))


def date_value(rng):
    r = rng.random()
    if r < 0.05:
        return rng.choice([datetime.date(1, 1, 1), datetime.date(9999, 12, 31), datetime.date(1970, 1, 1)])
    base = datetime.date(2020, 1, 1) if r < 0.6 else datetime.date(1900, 1, 1)
    return base + datetime.timedelta(days=rng.randint(0, 60 if r < 0.6 else 100000))


def ts_value(rng):
    base = datetime.datetime(2020, 1, 1)
    if rng.random() < 0.5:
        return base + datetime.timedelta(hours=rng.randint(0, 48))
    return base + datetime.timedelta(seconds=rng.randint(-10**9, 10**9), microseconds=rng.randint(0, 999999))


def value(rng, col):
    if rng.random() < 0.12:
        return None
    if col.cls == "int":
        return int_value(rng, INT_TYPES[col.sql_type][1])
    if col.cls == "float":
        return float_value(rng, col.sql_type == "REAL")
    if col.cls == "dec":
        return dec_value(rng, col.arrow_type.precision, col.arrow_type.scale)
    if col.cls == "str":
        return rng.choice(STRING_POOL)
    if col.cls == "bool":
        return rng.random() < 0.5
    if col.cls == "date":
        return date_value(rng)
    return ts_value(rng)


def make_tables(rng, n_tables=3):
    """{name: (columns, pyarrow table)}; every table has a unique BIGINT id."""
    tables = {}
    for ti in range(n_tables):
        cols = [Column("id", "BIGINT", "id", pa.int64())]
        for ci in range(rng.randint(2, 6)):
            sql_type, cls, at = column_types(rng)
            cols.append(Column(f"c{ci}", sql_type, cls, at))
        n = rng.choice([0, 1, 3, 8, 20, 40, 60]) if rng.random() < 0.2 else rng.randint(5, 40)
        data = {"id": list(range(n))}
        for c in cols[1:]:
            data[c.name] = [value(rng, c) for _ in range(n)]
        schema = pa.schema([(c.name, c.arrow_type) for c in cols])
        tables[f"t{ti}"] = (cols, pa.table(data, schema=schema))
    return tables


# ---------------------------------------------------------------------------
# Expressions: gen(cls) returns SQL text of that class


class Gen:
    def __init__(self, rng, tables):
        self.rng = rng
        self.tables = tables

    # -- helpers
    def cols_of(self, scope, cls):
        return [f"{alias}.{c.name}" for alias, cols in scope for c in cols
                if c.cls == cls or (cls == "int" and c.cls == "id")]

    def literal(self, cls):
        r = self.rng
        if cls == "int":
            return str(r.choice([0, 1, 2, 3, -1, 5, 10, 100, 2147483647, -2147483648, 9223372036854775807]))
        if cls == "float":
            return r.choice(["0.5", "1.0", "-2.5", "0.0", "-0.0", "1e10", "CAST('NaN' AS DOUBLE)", "3.25"])
        if cls == "dec":
            return r.choice(["CAST(1.5 AS DECIMAL(5,2))", "CAST(-3 AS DECIMAL(10,0))", "CAST(0 AS DECIMAL(18,4))",
                             "CAST(99999.99 AS DECIMAL(7,2))"])
        if cls == "str":
            return "'" + r.choice(["", "a", "b", "cat", "Cat", "dog", "é", "10", "9"]) + "'"
        if cls == "bool":
            return r.choice(["TRUE", "FALSE"])
        if cls == "date":
            return r.choice(["DATE '2020-01-15'", "DATE '1970-01-01'", "DATE '2020-02-29'"])
        return r.choice(["TIMESTAMP '2020-01-01 12:00:00'", "TIMESTAMP '2020-01-02 00:00:00'"])

    def leaf(self, scope, cls):
        cols = self.cols_of(scope, cls)
        if cols and self.rng.random() < 0.8:
            return self.rng.choice(cols)
        if self.rng.random() < 0.05:
            return f"CAST(NULL AS {dict(int='BIGINT', float='DOUBLE', dec='DECIMAL(10,2)', str='VARCHAR', bool='BOOLEAN', date='DATE', ts='TIMESTAMP')[cls]})"  # noqa: E501
        return self.literal(cls)

    def expr(self, scope, cls, depth=0):
        r = self.rng
        if depth >= 3 or r.random() < 0.35:
            return self.leaf(scope, cls)
        d = depth + 1
        e = lambda c=cls: self.expr(scope, c, d)  # noqa: E731
        if r.random() < 0.08:
            return f"CASE WHEN {self.pred(scope, d)} THEN {e()} ELSE {e()} END"
        if r.random() < 0.06:
            return f"coalesce({e()}, {e()})"
        if r.random() < 0.04:
            return f"nullif({e()}, {e()})"
        if cls == "int":
            return r.choice([
                lambda: f"({e()} {r.choice(['+', '-', '*'])} {e()})",
                # Divisors through nullif: whether a division by zero in a row
                # that no result needs raises depends on evaluation order.
                lambda: f"({e()} / nullif({e()}, 0))",
                lambda: f"({e()} % nullif({e()}, 0))",
                lambda: f"abs({e()})",
                lambda: f"(- {e()})",
                lambda: f"length({self.expr(scope, 'str', d)})",
                lambda: f"CAST({self.expr(scope, r.choice(['float', 'dec', 'bool']), d)} AS {r.choice(list(INT_TYPES))})",  # noqa: E501
                lambda: f"TRY_CAST({self.expr(scope, 'str', d)} AS {r.choice(list(INT_TYPES))})",
                lambda: f"greatest({e()}, {e()})",
                lambda: f"least({e()}, {e()})",
                lambda: f"EXTRACT({r.choice(['YEAR', 'MONTH', 'DAY'])} FROM {self.expr(scope, 'date', d)})",
            ])()
        if cls == "float":
            return r.choice([
                lambda: f"({e()} {r.choice(['+', '-', '*', '/'])} {e()})",
                lambda: f"CAST({self.expr(scope, r.choice(['int', 'dec']), d)} AS DOUBLE)",
                lambda: f"TRY_CAST({self.expr(scope, 'str', d)} AS DOUBLE)",
                lambda: f"round({e()})",
                lambda: f"abs({e()})",
                lambda: f"sqrt(abs({e()}))",
                lambda: f"floor({e()})",
                lambda: f"({e()} + {self.expr(scope, 'int', d)})",
            ])()
        if cls == "dec":
            return r.choice([
                lambda: f"({e()} {r.choice(['+', '-'])} {e()})",
                lambda: f"({e()} * {self.expr(scope, 'int', d)})",
                lambda: f"CAST({self.expr(scope, 'int', d)} AS DECIMAL({r.choice([10, 20, 38])},{r.choice([0, 2])}))",  # noqa: E501
                lambda: f"TRY_CAST({self.expr(scope, 'str', d)} AS DECIMAL({r.choice([10, 20, 38])},{r.choice([0, 2])}))",  # noqa: E501
                lambda: f"abs({e()})",
                lambda: f"round({e()}, {r.randint(0, 3)})",
            ])()
        if cls == "str":
            return r.choice([
                lambda: f"({e()} || {e()})",
                lambda: f"upper({e()})",
                lambda: f"lower({e()})",
                lambda: f"substr({e()}, {r.randint(0, 3)}, {r.randint(0, 4)})",
                lambda: f"trim({e()})",
                lambda: f"replace({e()}, 'a', 'Z')",
                lambda: f"concat({e()}, {e()})",
                lambda: f"CAST({self.expr(scope, r.choice(['int', 'bool', 'date', 'dec']), d)} AS VARCHAR)",
                lambda: f"left({e()}, {r.randint(0, 3)})",
                lambda: f"lpad({e()}, {r.randint(0, 5)}, '*')",
            ])()
        if cls == "bool":
            return self.pred(scope, d)
        if cls == "date":
            return r.choice([
                lambda: f"CAST({self.expr(scope, 'ts', d)} AS DATE)",
                lambda: f"({e()} + INTERVAL '{r.randint(1, 40)} days')",
                lambda: f"({e()} - INTERVAL '1 month')",
            ])()
        return r.choice([
            lambda: f"({e()} + INTERVAL '{r.randint(1, 30)} hours')",
            lambda: f"date_trunc('{r.choice(['day', 'month', 'hour'])}', {e()})",
            lambda: f"CAST({self.expr(scope, 'date', d)} AS TIMESTAMP)",
        ])()

    def pred(self, scope, depth=0):
        r = self.rng
        if depth < 3 and r.random() < 0.3:
            return f"({self.pred(scope, depth + 1)} {r.choice(['AND', 'OR'])} {self.pred(scope, depth + 1)})"
        if depth < 3 and r.random() < 0.1:
            return f"(NOT {self.pred(scope, depth + 1)})"
        cls = r.choice(["int", "int", "float", "dec", "str", "str", "bool", "date", "ts"])
        a = self.expr(scope, cls, depth + 1)
        kind = r.random()
        if kind < 0.45:
            return f"({a} {r.choice(['=', '<>', '<', '<=', '>', '>='])} {self.expr(scope, cls, depth + 1)})"
        if kind < 0.55:
            return f"({a} IS {r.choice(['', 'NOT '])}NULL)"
        if kind < 0.62:
            return f"({a} IS {r.choice(['', 'NOT '])}DISTINCT FROM {self.expr(scope, cls, depth + 1)})"
        if kind < 0.72:
            items = ", ".join(self.expr(scope, cls, 3) for _ in range(r.randint(1, 4)))
            return f"({a} {r.choice(['', 'NOT '])}IN ({items}))"
        if kind < 0.8:
            return (f"({a} {r.choice(['', 'NOT '])}BETWEEN {self.expr(scope, cls, 3)} "
                    f"AND {self.expr(scope, cls, 3)})")
        if kind < 0.86 and cls == "str":
            pat = r.choice(["%a%", "a%", "%", "_", "c_t", "%\\%%", ""])
            return f"({a} {r.choice(['', 'NOT '])}{r.choice(['LIKE', 'ILIKE'])} '{pat}')"
        if kind < 0.94 and depth < 2:
            return self.subquery_pred(scope, cls, a)
        if cls == "bool":
            return a
        return f"({a} = {self.expr(scope, cls, depth + 1)})"

    def subquery_pred(self, scope, cls, outer_expr):
        """IN / NOT IN / EXISTS over another table, correlated half the time."""
        r = self.rng
        name = r.choice(list(self.tables))
        alias = f"s{r.randint(0, 999)}"
        inner_scope = [(alias, self.tables[name][0])]
        inner_cols = self.cols_of(inner_scope, cls)
        corr = ""
        if r.random() < 0.5:
            inner_int = self.cols_of(inner_scope, "int")
            outer_int = self.cols_of(scope, "int")
            if inner_int and outer_int:
                corr = f" AND {r.choice(inner_int)} {r.choice(['=', '<', '>'])} {r.choice(outer_int)}"
        where = f"WHERE {self.pred(inner_scope, 2)}{corr}" if corr or r.random() < 0.6 else ""
        if where.startswith("WHERE ") and not where[6:].strip():
            where = ""
        if inner_cols and r.random() < 0.7:
            return f"({outer_expr} {r.choice(['', 'NOT '])}IN (SELECT {r.choice(inner_cols)} FROM {name} {alias} {where}))"  # noqa: E501
        return f"({r.choice(['', 'NOT '])}EXISTS (SELECT 1 FROM {name} {alias} {where}))"


# ---------------------------------------------------------------------------
# Queries: gen_query returns (sql, ordered)

AGGS = {
    "int": ["sum({})", "min({})", "max({})", "avg({})", "count({})", "count(DISTINCT {})", "bit_and({})"],
    "float": ["sum({})", "min({})", "max({})", "avg({})", "count({})"],
    "dec": ["sum({})", "min({})", "max({})", "avg({})", "count(DISTINCT {})"],
    "str": ["min({})", "max({})", "count({})", "count(DISTINCT {})"],
    "bool": ["bool_and({})", "bool_or({})", "count({})"],
    "date": ["min({})", "max({})", "count({})"],
    "ts": ["min({})", "max({})"],
}
CLASSES = ["int", "float", "dec", "str", "bool", "date", "ts"]


def scope_of(gen, name, alias):
    return [(alias, gen.tables[name][0])]


def gen_select(gen):
    """A projection + filter query over one table; also the base of TLP."""
    r = gen.rng
    name = r.choice(list(gen.tables))
    scope = scope_of(gen, name, "a")
    items = [f"{gen.expr(scope, r.choice(CLASSES))} AS x{i}" for i in range(r.randint(1, 3))]
    return name, scope, items


def gen_query(gen):
    r = gen.rng
    kind = r.choice(["select", "select", "agg", "agg", "join", "join", "setop", "window", "distinct", "order",
                     "scalar_sub", "agg_nogroup"])
    names = list(gen.tables)
    if kind == "select":
        name, scope, items = gen_select(gen)
        return f"SELECT a.id, {', '.join(items)} FROM {name} a WHERE {gen.pred(scope)}", False
    if kind in ("agg", "agg_nogroup"):
        name = r.choice(names)
        scope = scope_of(gen, name, "a")
        keys = [] if kind == "agg_nogroup" else [gen.expr(scope, r.choice(CLASSES), 2) for _ in range(r.randint(1, 2))]
        aggs = []
        for _ in range(r.randint(1, 3)):
            cls = r.choice(CLASSES)
            agg = r.choice(AGGS[cls]).format(gen.expr(scope, cls, 2))
            if r.random() < 0.15:
                agg += f" FILTER (WHERE {gen.pred(scope, 2)})"
            aggs.append(agg)
        if r.random() < 0.2:
            aggs.append("count(*)")
        where = f" WHERE {gen.pred(scope, 1)}" if r.random() < 0.4 else ""
        # Unaliased duplicates are refused by DataFusion ("Projections require unique expression names").
        sel = ", ".join([f"{k} AS k{i}" for i, k in enumerate(keys)] + [f"{a} AS g{i}" for i, a in enumerate(aggs)])
        group = f" GROUP BY {', '.join(keys)}" if keys else ""
        having = f" HAVING count(*) > {r.randint(0, 3)}" if keys and r.random() < 0.25 else ""
        return f"SELECT {sel} FROM {name} a{where}{group}{having}", False
    if kind == "join":
        n1, n2 = r.choice(names), r.choice(names)
        scope = scope_of(gen, n1, "a") + scope_of(gen, n2, "b")
        jt = r.choice(["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN", "CROSS JOIN"])
        cond = ""
        if jt != "CROSS JOIN":
            cls = r.choice(["int", "int", "str", "dec", "date"])
            la = gen.cols_of(scope[:1], cls) or ["a.id"]
            lb = gen.cols_of(scope[1:], cls) or ["b.id"]
            if la == ["a.id"] or lb == ["b.id"]:
                la, lb = ["a.id"], ["b.id"]
            cond = f" ON {r.choice(la)} = {r.choice(lb)}"
            if r.random() < 0.3:
                cond += f" AND {gen.pred(scope, 2)}"
        where = f" WHERE {gen.pred(scope, 1)}" if r.random() < 0.4 else ""
        items = [f"{gen.expr(scope, r.choice(CLASSES), 2)} AS x{i}" for i in range(r.randint(1, 3))]
        return f"SELECT a.id AS aid, b.id AS bid, {', '.join(items)} FROM {n1} a {jt} {n2} b{cond}{where}", False
    if kind == "setop":
        cls = r.choice(CLASSES)
        parts = []
        for alias in ("a", "b"):
            name = r.choice(names)
            scope = scope_of(gen, name, alias)
            parts.append(f"SELECT {gen.expr(scope, cls, 1)} AS v FROM {name} {alias} WHERE {gen.pred(scope, 2)}")
        op = r.choice(["UNION", "UNION ALL", "INTERSECT", "EXCEPT"])
        return f"{parts[0]} {op} {parts[1]}", False
    if kind == "window":
        name = r.choice(names)
        scope = scope_of(gen, name, "a")
        part = gen.expr(scope, r.choice(["int", "str", "bool"]), 2)
        ocls = r.choice(["int", "str", "date", "float"])
        order = f"{gen.expr(scope, ocls, 2)}{r.choice(['', ' DESC'])}{r.choice(['', ' NULLS FIRST', ' NULLS LAST'])}"
        fn = r.choice([
            "rank()", "dense_rank()", f"sum({gen.expr(scope, 'int', 2)})", f"count({gen.expr(scope, 'str', 2)})",
            f"max({gen.expr(scope, 'int', 2)})", "row_number()", f"lag({gen.expr(scope, 'int', 2)})",
        ])
        # row_number and lag need a total order to be deterministic: the unique id breaks ties.
        if fn in ("row_number()",) or fn.startswith("lag("):
            order += ", a.id"
        frame = ""
        if fn.startswith(("sum", "count", "max")) and r.random() < 0.4:
            frame = r.choice([" ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING", " ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"])  # noqa: E501
            order += ", a.id"
        return f"SELECT a.id, {fn} OVER (PARTITION BY {part} ORDER BY {order}{frame}) AS w FROM {name} a", False
    if kind == "distinct":
        name = r.choice(names)
        scope = scope_of(gen, name, "a")
        items = ", ".join(f"{gen.expr(scope, r.choice(CLASSES), 2)} AS d{i}" for i in range(r.randint(1, 2)))
        return f"SELECT DISTINCT {items} FROM {name} a", False
    if kind == "order":
        name = r.choice(names)
        scope = scope_of(gen, name, "a")
        cls = r.choice(CLASSES)
        key = gen.expr(scope, cls, 2)
        desc = r.choice(["", " DESC"])
        nulls = r.choice(["", " NULLS FIRST", " NULLS LAST"])
        return (f"SELECT a.id, {key} AS k FROM {name} a ORDER BY k{desc}{nulls}, a.id LIMIT {r.randint(0, 25)}",
                True)
    # scalar subquery in the select list, correlated half the time
    n1, n2 = r.choice(names), r.choice(names)
    outer = scope_of(gen, n1, "a")
    inner = scope_of(gen, n2, "b")
    cls = r.choice(["int", "float", "dec", "str", "date"])
    agg = r.choice(AGGS[cls]).format(gen.expr(inner, cls, 2))
    corr = ""
    oi, ii = gen.cols_of(outer, "int"), gen.cols_of(inner, "int")
    if r.random() < 0.6:
        corr = f" WHERE {r.choice(ii)} = {r.choice(oi)}"
    return f"SELECT a.id, (SELECT {agg} FROM {n2} b{corr}) AS sq FROM {n1} a", False


# ---------------------------------------------------------------------------
# Results


def norm(v):
    """A value in a form that compares across engines: floats to 10
    significant digits (-0.0 as 0.0, NaN as a string), decimals by value."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return float(f"{v:.10g}") + 0.0
    if isinstance(v, decimal.Decimal):
        return ("dec", format(v.normalize(), "f") if v != 0 else "0")
    if isinstance(v, int):
        return v
    if isinstance(v, (datetime.datetime, datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, datetime.timedelta):
        return ("td", v.days, v.seconds, v.microseconds)
    if isinstance(v, bytes):
        return ("bytes", v.hex())
    if isinstance(v, list):
        return ("list", tuple(norm(x) for x in v))
    if isinstance(v, dict):
        return ("struct", tuple((k, norm(x)) for k, x in v.items()))
    return ("other", repr(v))


def rows_of(table):
    cols = [c.to_pylist() for c in table.columns]
    return [tuple(norm(c[i]) for c in cols) for i in range(table.num_rows)]


def canonical(rows, ordered):
    return rows if ordered else sorted(rows, key=repr)


def answer(run, sql):
    """("ok", rows) or ("error", message)."""
    try:
        return "ok", rows_of(run(sql))
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # noqa: BLE001  (any failure of either engine is an answer, a Rust panic included)
        return "error", f"{type(e).__name__}: {e}"


class Ours:
    def __init__(self, lib, tables, partitions=2):
        self.engine = SqlEngine(lib)
        self.partitions = partitions
        for name, (_, table) in tables.items():
            self.engine.register(name, table, batch_rows=7)

    def run(self, sql):
        return self.engine.query(sql, self.partitions, 16)

    def close(self):
        self.engine.close()


class DataFusion:
    def __init__(self, tables):
        import datafusion
        cfg = datafusion.SessionConfig().with_target_partitions(2)
        self.ctx = datafusion.SessionContext(cfg)
        for name, (_, table) in tables.items():
            batches = table.to_batches() or [pa.RecordBatch.from_pylist([], schema=table.schema)]
            self.ctx.register_record_batches(name, [batches])

    def run(self, sql):
        return self.ctx.sql(sql).to_arrow_table()


class DuckDB:
    def __init__(self, tables):
        import duckdb
        self.con = duckdb.connect()
        for name, (_, table) in tables.items():
            self.con.register(name, table)

    def run(self, sql):
        return self.con.sql(sql).to_arrow_table()

    def close(self):
        self.con.close()


# ---------------------------------------------------------------------------
# Checks


def load_known():
    if not KNOWN_FILE.exists():
        return []
    return json.loads(KNOWN_FILE.read_text())


def known_match(known, category, sql, ours, theirs, duckdb_with_us=None):
    """The id of the known difference this mismatch is an instance of, or None.
    An entry marked duckdb_sides_with_us (a DataFusion bug SQL's rules decide)
    matches only when DuckDB gave our answer (duckdb_with_us is True), or
    with duckdb_may_fail also when DuckDB failed ("error")."""
    for k in known:
        if category not in k["categories"]:
            continue
        if k.get("duckdb_sides_with_us") and not (
                duckdb_with_us is True or (k.get("duckdb_may_fail") and duckdb_with_us == "error")):
            continue
        if not re.search(k["sql_pattern"], sql, re.I | re.S):
            continue
        ours_pat = k.get("ours_pattern")
        if ours_pat and not re.search(ours_pat, str(ours), re.S):
            continue
        theirs_pat = k.get("datafusion_pattern")
        if theirs_pat and not re.search(theirs_pat, str(theirs), re.S):
            continue
        return k["id"]
    return None


DF_GAP = re.compile(r"This feature is not implemented|Unsupported|NotImplemented|null_aware anti join only supports", re.I)


def loosen(v):
    """A normalized value as DuckDB's dialect may spell it: decimals and
    floats as floats (its avg of a decimal is a double), midnight
    timestamps as dates (its date + interval is a timestamp)."""
    if isinstance(v, tuple) and len(v) == 2 and v[0] == "dec":
        return float(f"{float(v[1]):.10g}") + 0.0
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, (int, float)):
        return float(f"{float(v):.10g}") + 0.0
    if isinstance(v, str) and len(v) == 19 and v.endswith("T00:00:00") and v[4] == "-":
        return v[:10]
    return v


def same_as_duckdb(ours, duck, ordered):
    """Whether DuckDB gave our answer, up to its own spelling of types
    ("error" when DuckDB failed where we answered)."""
    if ours[0] == "ok" and duck[0] == "error":
        return "error"
    if ours[0] != "ok" or duck[0] != "ok" or len(ours[1]) != len(duck[1]):
        return ours[0] == duck[0] == "error"
    lo = [tuple(loosen(x) for x in r) for r in ours[1]]
    ld = [tuple(loosen(x) for x in r) for r in duck[1]]
    return canonical(lo, ordered) == canonical(ld, ordered)


def compare(ours, theirs, ordered):
    """None when the answers agree, else the mismatch category."""
    (ok_o, val_o), (ok_t, val_t) = ours, theirs
    if ok_o == "error" and ok_t == "error":
        return None
    if ok_o == "error":
        return "error"
    if ok_t == "error":
        # DataFusion's own gaps ("not implemented", "Unsupported ...") are
        # not differences in answers: we go beyond it there.
        if DF_GAP.search(val_t):
            return None
        return "accepted"
    return None if canonical(val_o, ordered) == canonical(val_t, ordered) else "wrong"


def tlp_queries(gen):
    """(whole, [three partitions]) of a TLP check."""
    name, scope, items = gen_select(gen)
    p = gen.pred(scope)
    base = f"SELECT a.id, {', '.join(items)} FROM {name} a"
    return base, [f"{base} WHERE {p}", f"{base} WHERE NOT ({p})", f"{base} WHERE ({p}) IS NULL"]


def norec_queries(gen):
    name = gen.rng.choice(list(gen.tables))
    scope = scope_of(gen, name, "a")
    p = gen.pred(scope)
    return f"SELECT count(*) FROM {name} a WHERE {p}", f"SELECT count(CASE WHEN {p} THEN 1 END) FROM {name} a"


class Case:
    """One mismatch: everything needed to replay it."""

    def __init__(self, category, sql, tables, ours, theirs, ordered, extra=None):
        self.category, self.sql, self.tables = category, sql, tables
        self.ours, self.theirs, self.ordered, self.extra = ours, theirs, ordered, extra or {}


def check_one(lib, tables, sql, ordered, category_only=None):
    ours_engine = Ours(lib, tables)
    try:
        ours = answer(ours_engine.run, sql)
    finally:
        ours_engine.close()
    theirs = answer(DataFusion(tables).run, sql)
    cat = compare(ours, theirs, ordered)
    if category_only and cat != category_only:
        return None, ours, theirs
    return cat, ours, theirs


def reduce_rows(lib, tables, sql, ordered, category, budget=40):
    """Drops chunks of rows from each table while the mismatch stays the same."""
    tables = dict(tables)
    tries = 0
    for name in list(tables):
        cols, table = tables[name]
        chunk = max(1, table.num_rows // 2)
        while chunk >= 1 and tries < budget:
            start = 0
            changed = False
            while start < tables[name][1].num_rows and tries < budget:
                t = tables[name][1]
                keep = pa.concat_tables([t.slice(0, start), t.slice(start + chunk)])
                trial = dict(tables)
                trial[name] = (cols, keep)
                tries += 1
                cat, _, _ = check_one(lib, trial, sql, ordered, category)
                if cat == category:
                    tables = trial
                    changed = True
                else:
                    start += chunk
            if not changed:
                chunk //= 2
    return tables


# ---------------------------------------------------------------------------
# Cases as JSON


def encode_value(v):
    if isinstance(v, float):
        if math.isnan(v):
            return {"f": "nan"}
        if math.isinf(v):
            return {"f": "inf" if v > 0 else "-inf"}
        if v == 0 and math.copysign(1, v) < 0:
            return {"f": "-0.0"}
        return v
    if isinstance(v, decimal.Decimal):
        return {"d": str(v)}
    if isinstance(v, datetime.datetime):
        return {"ts": v.isoformat()}
    if isinstance(v, datetime.date):
        return {"date": v.isoformat()}
    return v


def decode_value(v):
    if isinstance(v, dict):
        if "f" in v:
            return float(v["f"])
        if "d" in v:
            return decimal.Decimal(v["d"])
        if "ts" in v:
            return datetime.datetime.fromisoformat(v["ts"])
        if "date" in v:
            return datetime.date.fromisoformat(v["date"])
    return v


def arrow_type_of(sql_type):
    m = re.fullmatch(r"DECIMAL\((\d+),(\d+)\)", sql_type)
    if m:
        return "dec", pa.decimal128(int(m.group(1)), int(m.group(2)))
    simple = {"DOUBLE": ("float", pa.float64()), "REAL": ("float", pa.float32()), "VARCHAR": ("str", pa.string()),
              "BOOLEAN": ("bool", pa.bool_()), "DATE": ("date", pa.date32()),
              "TIMESTAMP": ("ts", pa.timestamp("us"))}
    if sql_type in simple:
        return simple[sql_type]
    return "int", INT_TYPES[sql_type][0]


def tables_to_json(tables):
    out = {}
    for name, (cols, table) in tables.items():
        data = table.to_pydict()
        out[name] = {"columns": [[c.name, c.sql_type] for c in cols],
                     "rows": [[encode_value(data[c.name][i]) for c in cols] for i in range(table.num_rows)]}
    return out


def tables_from_json(obj):
    tables = {}
    for name, spec in obj.items():
        cols = []
        for cname, sql_type in spec["columns"]:
            cls, at = arrow_type_of(sql_type)
            cols.append(Column(cname, sql_type, "id" if cname == "id" else cls, at))
        rows = [[decode_value(v) for v in row] for row in spec["rows"]]
        data = {c.name: [row[i] for row in rows] for i, c in enumerate(cols)}
        tables[name] = (cols, pa.table(data, schema=pa.schema([(c.name, c.arrow_type) for c in cols])))
    return tables


def case_to_json(case, known_id=None):
    def ans(a):
        return {"status": a[0], "value": a[1] if a[0] == "error" else [list(map(str, r)) for r in a[1][:20]]}
    return {"category": case.category, "sql": case.sql, "ordered": case.ordered, "known": known_id,
            "ours": ans(case.ours), "datafusion": ans(case.theirs), "tables": tables_to_json(case.tables),
            **case.extra}


# ---------------------------------------------------------------------------
# A run


class Stats:
    def __init__(self):
        self.queries = 0
        self.both_ok = 0
        self.both_error = 0
        self.mismatches = {}
        self.known = {}
        self.duckdb_agrees = 0

    def as_dict(self):
        return {"queries": self.queries, "both_answered": self.both_ok, "both_refused": self.both_error,
                "new_mismatches": self.mismatches, "known_mismatches": self.known,
                "duckdb_agreed_with_datafusion_on_new": self.duckdb_agrees}


def run(lib, seed, max_queries=None, seconds=None, queries_per_schema=25, use_duckdb=True, on_case=None):
    """Runs generated checks until max_queries or seconds; returns (stats, new cases)."""
    rng = random.Random(seed)
    known = load_known()
    stats = Stats()
    cases = []
    deadline = time.monotonic() + seconds if seconds else None

    def done():
        return (max_queries is not None and stats.queries >= max_queries) or \
            (deadline is not None and time.monotonic() >= deadline)

    def record(case, category):
        kid = known_match(known, category, case.sql, case.ours[1], case.theirs[1],
                          case.extra.get("duckdb_agrees_with_us"))
        bucket = stats.known if kid else stats.mismatches
        key = kid or category
        bucket[key] = bucket.get(key, 0) + 1
        if kid is None:
            cases.append(case)
            if on_case:
                on_case(case)

    while not done():
        tables = make_tables(rng)
        gen = Gen(rng, tables)
        ours_engine = Ours(lib, tables)
        theirs_engine = DataFusion(tables)
        duck = DuckDB(tables) if use_duckdb else None
        try:
            for _ in range(queries_per_schema):
                if done():
                    break
                roll = rng.random()
                stats.queries += 1
                if roll < 0.1:
                    whole, parts = tlp_queries(gen)
                    w = answer(ours_engine.run, whole)
                    ps = [answer(ours_engine.run, p) for p in parts]
                    if w[0] == "ok" and all(p[0] == "ok" for p in ps):
                        union = [row for p in ps for row in p[1]]
                        if canonical(union, False) != canonical(w[1], False):
                            sql = f"{whole}\n-- partitions:\n" + "\n".join(parts)
                            record(Case("tlp", sql, tables, ("ok", union), w, False), "tlp")
                    continue
                if roll < 0.18:
                    q1, q2 = norec_queries(gen)
                    a1, a2 = answer(ours_engine.run, q1), answer(ours_engine.run, q2)
                    if a1[0] == "ok" and a2[0] == "ok" and a1[1] != a2[1]:
                        record(Case("norec", f"{q1}\n-- vs\n{q2}", tables, a1, a2, True), "norec")
                    continue
                sql, ordered = gen_query(gen)
                ours = answer(ours_engine.run, sql)
                theirs = answer(theirs_engine.run, sql)
                cat = compare(ours, theirs, ordered)
                if cat is None:
                    if ours[0] == "ok":
                        stats.both_ok += 1
                    else:
                        stats.both_error += 1
                    continue
                extra = {}
                if duck is not None:
                    d = answer(duck.run, sql)
                    agree = compare(d, theirs, ordered) is None and d[0] == theirs[0]
                    extra["duckdb_agrees_with_datafusion"] = agree
                    extra["duckdb_agrees_with_us"] = same_as_duckdb(ours, d, ordered)
                    if agree:
                        stats.duckdb_agrees += 1
                record(Case(cat, sql, tables, ours, theirs, ordered, extra), cat)
        finally:
            ours_engine.close()
            if duck is not None:
                duck.close()
    return stats, cases


def replay(lib, path):
    """Replays a committed case: None when it behaves as recorded, else why not."""
    case = json.loads(pathlib.Path(path).read_text())
    tables = tables_from_json(case["tables"])
    if case["category"] in ("tlp", "norec"):
        queries = [q for q in re.split(r"\n-- (?:partitions:|vs)\n", case["sql"]) for q in q.split("\n") if q]
        ours_engine = Ours(lib, tables)
        try:
            answers = [answer(ours_engine.run, q) for q in queries]
        finally:
            ours_engine.close()
        if any(a[0] != "ok" for a in answers):
            return f"a query failed: {[a for a in answers if a[0] != 'ok'][0][1]}"
        if case["category"] == "tlp":
            union = [row for a in answers[1:] for row in a[1]]
            ok = canonical(union, False) == canonical(answers[0][1], False)
        else:
            ok = answers[0][1] == answers[1][1]
        return None if ok else f"{case['category']} check fails again"
    cat, ours, theirs = check_one(lib, tables, case["sql"], case["ordered"])
    if case.get("known"):
        return None  # a documented difference: it may persist, or be fixed
    return None if cat is None else f"{cat}: ours {str(ours)[:300]} datafusion {str(theirs)[:300]}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--queries", type=int, default=None)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=1, help="processes, each with seed, seed+1, ...")
    ap.add_argument("--out", default="sqlfuzz-out", help="directory for new mismatch cases and the summary")
    ap.add_argument("--no-reduce", action="store_true")
    ap.add_argument("--lib", default=os.environ.get("DFTEST_LIB"))
    args = ap.parse_args()
    if not args.lib:
        sys.exit("set DFTEST_LIB or --lib to a built libdftest.so")
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.jobs > 1:
        # A job killed by a signal (a sanitizer's abort) breaks the executor instead of
        # hanging the campaign, as a multiprocessing.Pool would.
        from concurrent.futures import ProcessPoolExecutor
        from concurrent.futures.process import BrokenProcessPool
        with ProcessPoolExecutor(args.jobs) as pool:
            futures = [pool.submit(campaign_job, args.lib, args.seed + j, args.seconds, args.queries, str(out),
                                   not args.no_reduce) for j in range(args.jobs)]
            try:
                results = [f.result() for f in futures]
            except BrokenProcessPool:
                sys.exit("a campaign job died (its sanitizer report, if any, is on standard error above)")
    else:
        results = [campaign_job(args.lib, args.seed, args.seconds, args.queries, str(out), not args.no_reduce)]
    total = {"queries": 0, "both_answered": 0, "both_refused": 0, "new_mismatches": {}, "known_mismatches": {},
             "duckdb_agreed_with_datafusion_on_new": 0}
    for r in results:
        for k in ("queries", "both_answered", "both_refused", "duckdb_agreed_with_datafusion_on_new"):
            total[k] += r[k]
        for k in ("new_mismatches", "known_mismatches"):
            for kk, n in r[k].items():
                total[k][kk] = total[k].get(kk, 0) + n
    total["seconds"] = args.seconds
    total["jobs"] = args.jobs
    total["known_differences_entries"] = len(load_known())
    (out / "summary.json").write_text(json.dumps(total, indent=2) + "\n")
    print(json.dumps(total, indent=2))
    return 1 if total["new_mismatches"] else 0


def campaign_job(lib_path, seed, seconds, queries, out, reduce):
    lib = ctypes.CDLL(lib_path)
    outdir = pathlib.Path(out)
    counter = [0]

    def on_case(case):
        if reduce and case.category not in ("tlp", "norec"):
            case.tables = reduce_rows(lib, case.tables, case.sql, case.ordered, case.category)
            _, case.ours, case.theirs = check_one(lib, case.tables, case.sql, case.ordered)
        counter[0] += 1
        (outdir / f"seed{seed}-{counter[0]:04d}-{case.category}.json").write_text(
            json.dumps(case_to_json(case), indent=1, default=str) + "\n")

    stats, _ = run(lib, seed, max_queries=queries, seconds=seconds, on_case=on_case)
    return stats.as_dict()


if __name__ == "__main__":
    sys.exit(main())
