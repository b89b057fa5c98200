"""Differential SQL fuzzing against DataFusion (tests/sqlfuzz/sqlfuzz.py):
a bounded run with a fixed seed, the committed regression cases replayed,
and the known-differences file checked for form.  The hour-long campaign
is a documented command (tests/sqlfuzz/README.md), not part of this suite."""

import json
import pathlib
import sys

import pytest

SQLFUZZ = pathlib.Path(__file__).resolve().parent.parent / "sqlfuzz"
sys.path.insert(0, str(SQLFUZZ))
import sqlfuzz  # noqa: E402

# Enough queries for every query kind and oracle many times over: about a
# minute under AddressSanitizer (the issue allows three).
BOUNDED_SEED = 20261203
BOUNDED_QUERIES = 4000


def test_bounded_differential_run(dftest):
    stats, cases = sqlfuzz.run(dftest, BOUNDED_SEED, max_queries=BOUNDED_QUERIES)
    print(json.dumps(stats.as_dict(), indent=1))
    assert stats.queries == BOUNDED_QUERIES
    # The run must exercise the engines, not only collect errors.
    assert stats.both_ok > BOUNDED_QUERIES // 2, stats.as_dict()
    detail = "\n\n".join(f"[{c.category}] {c.sql}\n  ours: {str(c.ours)[:400]}\n  datafusion: {str(c.theirs)[:400]}"
                         for c in cases[:5])
    assert not cases, f"{len(cases)} new mismatches (fix them or record them in known-differences.json):\n{detail}"


@pytest.mark.parametrize("path", sorted(SQLFUZZ.glob("regressions/*.json")), ids=lambda p: p.stem)
def test_regression_case(dftest, path):
    problem = sqlfuzz.replay(dftest, path)
    assert problem is None, problem


def test_known_differences_are_documented():
    known = json.loads(sqlfuzz.KNOWN_FILE.read_text())
    ids = set()
    for k in known:
        assert k["id"] not in ids, k["id"]
        ids.add(k["id"])
        assert set(k["categories"]) <= {"wrong", "error", "accepted", "tlp", "norec"}, k
        assert k["reason"].strip() and k["sql_pattern"].strip(), k
        example = k["example"]
        assert example["sql"] and "ours" in example and "datafusion" in example, k
    for path in SQLFUZZ.glob("regressions/*.json"):
        case = json.loads(path.read_text())
        assert case.get("known") in (None, *ids), f"{path.name} names an unknown difference"
