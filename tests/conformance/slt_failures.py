"""Writes slt-failures.md: every sqllogictest block the engine fails, with
its reason.  Run after a change to the engine (it runs the corpus):

    DFTEST_LIB=build-rel/tests/tools/libdftest.so python tests/conformance/slt_failures.py

Each failure is classified by the first rule below its message matches; a
failure no rule explains is listed as "unclassified" (a defect of this list).
"""

import os
import pathlib
import re
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
OUT = HERE / "slt-failures.md"

# (pattern over "file:line message", reason).  First match wins.
RULES = [
    (r"Decimal(32|64|256)|decimal256|Decimal256|test_nullable_decimal|decimal_timestamps",
     "Decimal32/Decimal64/Decimal256 types: we hold every decimal in 128 bits (DECIMAL(p > 38) is not supported)"),
    (r"Utf8View|types \?|types TT != \?T|types T != \?", "Utf8View, Null-typed or dictionary result types: we return plain Utf8"),
    (r"approx_percentile_cont_with_weight|aggregate\.slt:(484|490|1410|1420|1439|1459|1468) |aggregate_skip_partial\.slt:(312|430) ",
     "approx_percentile_cont / approx_median: we compute the exact percentile, DataFusion a t-digest estimate"),
    (r"aggregate\.slt:(2524|2539|2717) |scalar\.slt:188 |expr\.slt:23 |scalar\.slt:74 ",
     "Float32 (or integer) results where we compute and return Float64"),
    (r"Interval\(YearMonth\)|Interval\(DayTime\)|date_part__datetime\.slt:(665|671) ",
     "interval subtypes: we hold every interval as MonthDayNano, so YearMonth/DayTime types and their part errors differ"),
    (r"sql_not_read_only|only read-only", "statements other than queries inside the corpus (CREATE ... the harness does not carry out)"),
    (r"Unicode property classes", "regular expressions: Unicode property classes (\\p{..}) are not supported"),
    (r"WINDOW clauses", "named WINDOW clauses are not supported"),
    (r"DISTINCT, FILTER and ORDER BY are not supported in window", "DISTINCT or ORDER BY inside a window call"),
    (r"INTERSECT ALL and EXCEPT ALL", "INTERSECT ALL / EXCEPT ALL are not supported"),
    (r"SIMILAR TO", "SIMILAR TO is not supported"),
    (r"found `ROW`", "ROW(...) constructors (struct values) are not supported"),
    (r"must appear in the GROUP BY|While expanding wildcard", "GROUP BY functional dependence (keys of a unique constraint) is not tracked"),
    (r"quoted identifiers keep their case|not found; valid columns|`sn` not found|`a` not found|is ambiguous",
     "column resolution through derived tables with duplicate names, or case-folded quoted names, differs"),
    (r"(t0|t1|t|t2|t_utc|timestamp|uuid_table|distinct_avg) not found|table `\w+` not found|table \w+ exists",
     "a setup statement earlier in the file failed, so its table is missing"),
    (r"to_date does not accept|to_unixtime does not accept|Time64|Date64", "to_date / to_unixtime / time functions over argument types we do not accept"),
    (r"uuid\(\)", "uuid() is not supported"),
    (r"nth_value|var_sample|unknown function", "functions not implemented"),
    (r"count takes|quantile_cont takes|approx_percentile_cont fraction|percentile_cont over this type",
     "aggregate argument forms not implemented"),
    (r"null_aware_anti_join\.slt:82 ",
     "x NOT IN (q) under OR with NULLs: DataFusion's mark join ignores the NULLs, we keep SQL's three values (as DuckDB)"),
    (r"select\.slt:(647|650) |predicates\.slt:433 |aggregate\.slt:(4581|4585) ",
     "an error DataFusion raises that we do not: AND/OR evaluated lazily, duplicate unaliased names, IN subqueries outside WHERE"),
    (r"timestamps__datetime\.slt:(1077|2387|2397|2407|1257|1268|1275|1287|1499|2188) |group_by\.slt:2257 |window\.slt:555 ",
     "zoned timestamps: comparisons, unions and DST truncation across zones, and sub-second precision of timestamp casts, differ"),
    (r"date_bin_errors|cast_failed|numeric_overflow|division_by_zero|requested character|syntax invalid number|stride",
     "error behaviour on overflow or invalid values differs from DataFusion's"),
    (r"joins\.slt|pwmj\.slt|limit\.slt|select\.slt:(540|561) |window\.slt:(1726|1739|815|892|1155|1599) |aggregates_topk\.slt|scalar\.slt:(486|1339) |group_by\.slt:2061 |join_disable_repartition_joins\.slt:788 |expr\.slt:(884|894) |aggregate\.slt:(1065|1071|3896) |operator\.slt:(58|94) ",
     "different rows or order (ties under ORDER BY / LIMIT, grouping sets, empty-string rendering, type widths): to investigate"),
    (r"syntax", "SQL syntax not parsed"),
    (r"sql_unsupported", "features not implemented"),
    (r"sql_type", "type rules that differ from DataFusion's"),
]


def main():
    lib = os.environ.get("DFTEST_LIB")
    if not lib:
        sys.exit("set DFTEST_LIB to a built libdftest.so")
    env = dict(os.environ, DF_SLT_VERBOSE="1000")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", str(HERE / "test_slt.py")],
                         env=env, capture_output=True, text=True)
    cur, fails, total = None, [], None
    for line in run.stdout.splitlines():
        m = re.match(r"^(\S+\.slt)\s+(\d+)/(\d+)", line)
        if m:
            cur = m.group(1)
            continue
        m = re.match(r"^    line (\d+): (.*)", line)
        if m:
            fails.append((cur, int(m.group(1)), m.group(2)))
        m = re.match(r"^TOTAL\s+(\d+)/(\d+)", line)
        if m:
            total = (int(m.group(1)), int(m.group(2)))
    if total is None:
        sys.exit(run.stdout[-2000:] + run.stderr[-2000:])
    rows, unclassified = [], 0
    for f, line, msg in fails:
        key = f"{f}:{line} {msg}"
        reason = next((r for pat, r in RULES if re.search(pat, key)), None)
        if reason is None:
            unclassified += 1
            reason = "unclassified"
        rows.append((reason, f, line, msg))
    rows.sort(key=lambda r: (r[0], r[1], r[2]))
    out = [
        "# sqllogictest blocks the engine fails",
        "",
        f"Generated by `tests/conformance/slt_failures.py`: {total[0]} of {total[1]} blocks pass "
        f"({total[0] / total[1]:.1%}); these {len(rows)} fail, grouped by reason.",
        "",
        "| reason | file:line | what happened |",
        "| --- | --- | --- |",
    ]
    for reason, f, line, msg in rows:
        text = msg.replace("|", "\\|")[:140]
        out.append(f"| {reason} | {f}:{line} | {text} |")
    OUT.write_text("\n".join(out) + "\n")
    print(f"{len(rows)} failures, {unclassified} unclassified -> {OUT}")


if __name__ == "__main__":
    main()
