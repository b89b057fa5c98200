"""Limits are defined once, as named constants in
include/deltafunnel/deltafunnel.h; the C checks and messages and the Python
layer use the constant, and every document that quotes a limit must quote
the same number."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
HEADER = ROOT / "include" / "deltafunnel" / "deltafunnel.h"


def header_constant(name):
    m = re.search(rf"^#define {name} (\d+)\s*$", HEADER.read_text(encoding="utf-8"), re.M)
    assert m, f"{name} is not defined in {HEADER.name}"
    return int(m.group(1))


def test_parallel_connection_cap_is_quoted_as_defined():
    cap = header_constant("DF_MAX_PARALLEL_CONNECTIONS")
    quoting = [ROOT / "docs" / "python-api.md", ROOT / "docs" / "writes.md",
               ROOT / "python" / "deltafunnel" / "__init__.pyi"]
    for path in quoting:
        ranges = [int(n) for line in path.read_text(encoding="utf-8").splitlines()
                  if "parallel_connections" in line for n in re.findall(r"\b1\.\.=?(\d+)", line)]
        assert ranges, f"{path.name} no longer quotes the parallel_connections range"
        assert set(ranges) == {cap}, f"{path.name} quotes 1..{ranges}, the header says 1..{cap}"


def test_parallel_connection_cap_has_no_other_copy():
    """The sources that check parallel_connections use the constant, not the number."""
    for path in sorted((ROOT / "src" / "load").glob("*.c")) + [ROOT / "python" / "src" / "table.c"]:
        text = path.read_text(encoding="utf-8")
        for line in text.splitlines():
            if "parallel" in line:
                assert not re.search(r"\b16\b", line), f"{path.name}: {line.strip()}"
