"""Differential tests: random (seeded) queries over random tables, compared
with DuckDB.

The same Arrow tables are registered in the engine (through libdftest) and
in DuckDB; queries are generated from templates covering filters,
projections with arithmetic / CASE / CAST / string functions, GROUP BY
aggregates, inner and left joins, and ORDER BY + LIMIT.  Results are
compared as multisets of normalised rows (ORDER BY queries as sequences).
The templates avoid the few places where DuckDB and DataFusion disagree on
purpose (integer division, casts from floats to integers, division by zero).
"""

import decimal
import math
import pathlib
import random
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from dfhelpers import DfTestError, SqlEngine  # noqa: E402

pa = pytest.importorskip("pyarrow")
duckdb = pytest.importorskip("duckdb")

SEEDS = [1, 2, 3]
QUERIES_PER_SEED = 120


# ---------------------------------------------------------------------------
# Data


def make_tables(rng, n):
    words = ["ant", "bee", "cat", "dog", "eel", "Fox", "gnu", "", "h_t", "ibis"]

    def maybe(v, p=0.1):
        return None if rng.random() < p else v

    t = pa.table({
        "id": pa.array(list(range(n)), pa.int64()),
        "k": pa.array([maybe(rng.randint(0, 9), 0.05) for _ in range(n)], pa.int32()),
        "a": pa.array([maybe(rng.randint(-1000, 1000)) for _ in range(n)], pa.int64()),
        "b": pa.array([maybe(rng.randint(-50, 50)) for _ in range(n)], pa.int32()),
        "x": pa.array([maybe(round(rng.uniform(-100, 100), 3)) for _ in range(n)], pa.float64()),
        "s": pa.array([maybe(rng.choice(words)) for _ in range(n)], pa.string()),
        "m": pa.array([maybe(decimal.Decimal(rng.randint(-99999, 99999)).scaleb(-2)) for _ in range(n)],
                      pa.decimal128(10, 2)),
        "f": pa.array([maybe(rng.random() < 0.5) for _ in range(n)], pa.bool_()),
    })
    u = pa.table({
        "k": pa.array([maybe(rng.randint(0, 12), 0.05) for _ in range(n // 3)], pa.int32()),
        "name": pa.array([maybe(rng.choice(words)) for _ in range(n // 3)], pa.string()),
        "w": pa.array([maybe(rng.randint(0, 100)) for _ in range(n // 3)], pa.int64()),
    })
    return t, u


# ---------------------------------------------------------------------------
# Query generation


def int_expr(rng, depth=0):
    leaves = ["a", "b", "id", "k", str(rng.randint(-5, 5))]
    if depth > 1 or rng.random() < 0.4:
        return rng.choice(leaves)
    op = rng.choice(["+", "-", "*"])
    return f"({int_expr(rng, depth + 1)} {op} {int_expr(rng, depth + 1)})"


def num_expr(rng):
    choice = rng.randint(0, 5)
    if choice == 0:
        return f"x * {rng.randint(1, 4)}"
    if choice == 1:
        return "CAST(a AS DOUBLE) + x"
    if choice == 2:
        return f"m + CAST({rng.randint(-3, 3)} AS DECIMAL(10,2))"
    if choice == 3:
        return "m * m"
    if choice == 4:
        return "abs(b)"
    return int_expr(rng)


LIKE_PATTERNS = ["%a%", "b%", "%t", "_o_", "h_t", "%", "%e_"]


def predicate(rng, depth=0):
    kinds = [
        lambda: f"{int_expr(rng)} {rng.choice(['<', '<=', '>', '>=', '=', '<>'])} {rng.randint(-100, 100)}",
        lambda: f"x {rng.choice(['<', '>'])} {rng.uniform(-50, 50):.2f}",
        lambda: f"s {rng.choice(['=', '<', '>'])} '{rng.choice(['bee', 'cat', 'dog', 'Fox', ''])}'",
        lambda: f"s LIKE '{rng.choice(LIKE_PATTERNS)}'",
        lambda: f"{rng.choice(['a', 'x', 's', 'm', 'k', 'f'])} IS {rng.choice(['', 'NOT '])}NULL",
        lambda: f"k IN ({', '.join(str(rng.randint(0, 9)) for _ in range(rng.randint(1, 4)))})",
        lambda: f"b {rng.choice(['', 'NOT '])}BETWEEN {rng.randint(-30, 0)} AND {rng.randint(0, 30)}",
        lambda: "f",
        lambda: f"m > {rng.randint(-500, 500)}.5",
    ]
    if depth < 2 and rng.random() < 0.4:
        op = rng.choice(["AND", "OR"])
        left, right = predicate(rng, depth + 1), predicate(rng, depth + 1)
        neg = "NOT " if rng.random() < 0.2 else ""
        return f"{neg}({left} {op} {right})"
    return rng.choice(kinds)()


def projection(rng):
    exprs = [
        lambda: num_expr(rng),
        lambda: f"CASE WHEN {predicate(rng)} THEN {int_expr(rng)} ELSE {int_expr(rng)} END",
        lambda: f"CASE k WHEN 1 THEN 'one' WHEN 2 THEN 'two' END",
        lambda: "CAST(b AS VARCHAR)",
        lambda: "CAST(k AS BIGINT) * 1000",
        lambda: "coalesce(s, 'none')",
        lambda: "upper(s)",
        lambda: "lower(s)",
        lambda: "length(s)",
        lambda: "substr(s, 2, 2)",
        lambda: "s || '-' || CAST(k AS VARCHAR)",
        lambda: "trim(s)",
        lambda: "replace(s, 'a', 'A')",
        lambda: "nullif(b, 0)",
        lambda: "greatest(a, b)",
        lambda: "least(a, b, 7)",
        lambda: f"{int_expr(rng)} % {rng.randint(1, 9)}",
        lambda: "round(x)",  # round(x, n) scales in binary like DataFusion; DuckDB rounds decimally
        lambda: "NOT f",
    ]
    n = rng.randint(1, 4)
    return ", ".join(f"{rng.choice(exprs)()} AS c{i}" for i in range(n))


def gen_query(rng):
    kind = rng.randint(0, 5)
    if kind == 0:
        return f"SELECT id, {projection(rng)} FROM t WHERE {predicate(rng)}", False
    if kind == 1:
        aggs = rng.sample(["count(*)", "count(s)", "sum(a)", "sum(b)", "min(x)", "max(x)", "avg(b)", "min(s)",
                           "max(s)", "sum(m)", "count(DISTINCT b)", "avg(m)", "max(m)", "sum(x)"], rng.randint(1, 4))
        keys = rng.choice(["k", "s", "k, f", "k % 3", "f"])
        having = f" HAVING count(*) > {rng.randint(0, 5)}" if rng.random() < 0.3 else ""
        where = f" WHERE {predicate(rng)}" if rng.random() < 0.5 else ""
        return f"SELECT {keys}, {', '.join(aggs)} FROM t{where} GROUP BY {keys}{having}", False
    if kind == 2:
        jt = rng.choice(["JOIN", "LEFT JOIN"])
        cond = "t.k = v.uk" if rng.random() < 0.8 else "t.k = v.uk AND v.w > t.b"
        where = f" WHERE {predicate(rng)}" if rng.random() < 0.5 else ""
        return (f"SELECT t.id, t.s, v.name, v.w FROM t {jt} (SELECT k AS uk, name, w FROM u) v ON {cond}{where}",
                False)
    if kind == 3:
        limit = rng.randint(0, 30)
        desc = rng.choice(["", " DESC"])
        nulls = rng.choice([" NULLS FIRST", " NULLS LAST"])
        return (f"SELECT id, a, s FROM t WHERE {predicate(rng)} ORDER BY a{desc}{nulls}, id LIMIT {limit}", True)
    if kind == 4:
        return (f"SELECT k, count(*) AS c, sum(a) AS total FROM t GROUP BY k ORDER BY c DESC, k NULLS LAST "
                f"LIMIT {rng.randint(1, 5)}", True)
    return (f"SELECT u.k, count(t.id), max(t.x) FROM u LEFT JOIN t ON u.k = t.k GROUP BY u.k", False)


# ---------------------------------------------------------------------------
# Comparison


def norm(v):
    if v is None:
        return None
    if isinstance(v, bool):
        return v
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        return v
    if isinstance(v, decimal.Decimal):
        return float(v)
    if isinstance(v, int):
        return float(v) if abs(v) < 2**53 else v
    return v


def close(a, b):
    """Values equal, floats within a relative 1e-6 (decimal avg is truncated to scale + 4)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b))
    return a == b


def rows_equal(g, x):
    return len(g) == len(x) and all(len(r) == len(s) and all(close(a, b) for a, b in zip(r, s)) for r, s in zip(g, x))


def first_difference(g, x):
    for i, (r, s) in enumerate(zip(g, x)):
        if not (len(r) == len(s) and all(close(a, b) for a, b in zip(r, s))):
            return f"row {i}: got {r} expected {s}"
    return f"row counts {len(g)} vs {len(x)}"


def rows_of(table):
    cols = [c.to_pylist() for c in table.columns]
    return [tuple(norm(c[i]) for c in cols) for i in range(table.num_rows)]


def sort_key(row):
    return tuple((v is None, str(type(v)), round(v, 4) if isinstance(v, float) else (v if v is not None else 0))
                 for v in row)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_queries_match_duckdb(dftest, seed):
    if not hasattr(dftest, "dfsql_query"):
        raise RuntimeError("libdftest was built without dftest_sql.c")
    rng = random.Random(seed)
    t, u = make_tables(rng, 600)
    engine = SqlEngine(dftest)
    engine.register("t", t, 97)
    engine.register("u", u, 50)
    con = duckdb.connect()
    con.register("t", t)
    con.register("u", u)
    mismatches = []
    try:
        for i in range(QUERIES_PER_SEED):
            sql, ordered = gen_query(rng)
            expected = con.execute(sql).to_arrow_table()
            for partitions, batch in ((1, 8192), (4, 64)):
                try:
                    got = engine.query(sql, partitions, batch)
                except DfTestError as e:
                    mismatches.append(f"{sql}\n  engine error: {e}")
                    break
                g, x = rows_of(got), rows_of(expected)
                if not ordered:
                    g, x = sorted(g, key=sort_key), sorted(x, key=sort_key)
                if not rows_equal(g, x):
                    mismatches.append(f"{sql}\n  partitions={partitions}: {first_difference(g, x)}")
                    break
    finally:
        engine.close()
        con.close()
    assert not mismatches, f"{len(mismatches)} mismatches, first:\n" + "\n".join(mismatches[:3])
