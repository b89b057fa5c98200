"""Legacy Parquet list layouts (two-level lists, unannotated repeated
fields) read as pyarrow reads them.

pyarrow cannot write these layouts, so the files are crafted level by level
(tests/parquet_craft.py); pyarrow reading the same file is the oracle for
the Arrow type, field names included, and for the values.  The backward-
compatibility rules decide which node is a LIST's element: the repeated
node itself when it is a primitive, a group of several fields, a group
whose single field is repeated, or a group named `array` or
`<list>_tuple`; otherwise the repeated group's single child.  A repeated
element that is itself LIST-annotated is a list of lists."""


import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

import parquet_craft as pc  # noqa: E402
from dfhelpers import arrow_stream_from_c, parquet_read_ex  # noqa: E402

E = pc.element


@pytest.fixture(scope="module")
def read(dftest):
    fn = parquet_read_ex(dftest)
    return lambda path: arrow_stream_from_c(fn, str(path).encode(), None, None, None, 2, 0, 0).read_all()


def leaf(path, rep, dfn, values, max_rep, max_def, physical=pc.INT32):
    return {"path": path, "type": physical, "max_rep": max_rep, "max_def": max_def, "rep": rep, "def": dfn,
            "values": values}


def list_group(name, repetition, nchildren):
    return E(name, repetition, children=nchildren, converted=pc.CONVERTED_LIST, list_logical=True)


# The rows [[1, 2], [3, 4]], None, [], [[]] as levels of col (optional, def 1) / middle (repeated, def 2,
# rep 1) / inner (repeated int32, def 3, rep 2).
LOL_LEVELS = dict(rep=[0, 2, 1, 2, 0, 0, 0], dfn=[3, 3, 3, 3, 0, 1, 2], values=[1, 2, 3, 4], max_rep=2, max_def=3)


def list_of_lists(middle, middle_is_list):
    schema = [E("schema", children=1), list_group("col", pc.OPTIONAL, 1),
              list_group(middle, pc.REPEATED, 1) if middle_is_list else E(middle, pc.REPEATED, children=1),
              E("array", pc.REPEATED, physical=pc.INT32)]
    return schema, [leaf(["col", middle, "array"], **LOL_LEVELS)], 4


CASES = {
    # A repeated primitive is the element (rows [1, 2], None, [], [3]).
    "two_level_primitive": (
        [E("schema", children=1), list_group("col", pc.OPTIONAL, 1), E("element", pc.REPEATED, physical=pc.INT32)],
        [leaf(["col", "element"], [0, 1, 0, 0, 0], [2, 2, 0, 1, 2], [1, 2, 3], 1, 2)], 4),
    # A repeated LIST group inside a LIST is an inner list, whatever its name: [[1, 2], [3, 4]].
    "list_of_lists_array": list_of_lists("array", True),
    "list_of_lists_bag": list_of_lists("bag", True),
    "list_of_lists_tuple": list_of_lists("col_tuple", True),
    # An unannotated group whose one field is repeated is the element: a list of structs of lists.
    "group_of_repeated_array": list_of_lists("array", False),
    "group_of_repeated_bag": list_of_lists("bag", False),
    # A group of several fields is the element (rows [{1, 2}, {3, 4}], None, []).
    "group_of_two_fields": (
        [E("schema", children=1), list_group("col", pc.OPTIONAL, 1), E("pair", pc.REPEATED, children=2),
         E("a", pc.REQUIRED, physical=pc.INT32), E("b", pc.REQUIRED, physical=pc.INT32)],
        [leaf(["col", "pair", "a"], [0, 1, 0, 0], [2, 2, 0, 1], [1, 3], 1, 2),
         leaf(["col", "pair", "b"], [0, 1, 0, 0], [2, 2, 0, 1], [2, 4], 1, 2)], 3),
    # A one-field group named `array` or `<list>_tuple` is the element (rows [{x: 1}, {x: 2}], None).
    "one_field_group_named_array": (
        [E("schema", children=1), list_group("col", pc.OPTIONAL, 1), E("array", pc.REPEATED, children=1),
         E("x", pc.REQUIRED, physical=pc.INT32)],
        [leaf(["col", "array", "x"], [0, 1, 0], [2, 2, 0], [1, 2], 1, 2)], 2),
    "one_field_group_named_tuple": (
        [E("schema", children=1), list_group("col", pc.OPTIONAL, 1), E("col_tuple", pc.REPEATED, children=1),
         E("x", pc.REQUIRED, physical=pc.INT32)],
        [leaf(["col", "col_tuple", "x"], [0, 1, 0], [2, 2, 0], [1, 2], 1, 2)], 2),
    # Otherwise the single child is the element, under any names (rows [1, None], None, []).
    "three_level_other_names": (
        [E("schema", children=1), list_group("col", pc.OPTIONAL, 1), E("bag", pc.REPEATED, children=1),
         E("item", pc.OPTIONAL, physical=pc.INT32)],
        [leaf(["col", "bag", "item"], [0, 1, 0, 0], [3, 2, 0, 1], [1], 1, 3)], 3),
    # Unannotated repeated fields outside a LIST: required lists of required elements.
    "unannotated_repeated_primitive": (
        [E("schema", children=1), E("col", pc.REPEATED, physical=pc.INT32)],
        [leaf(["col"], [0, 1, 0, 0], [1, 1, 0, 1], [1, 2, 3], 1, 1)], 3),
    "unannotated_repeated_group": (
        [E("schema", children=1), E("col", pc.REPEATED, children=1), E("a", pc.REQUIRED, physical=pc.INT32)],
        [leaf(["col", "a"], [0, 1, 0], [1, 1, 0], [1, 2], 1, 1)], 2),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_legacy_list_layout_reads_like_pyarrow(read, tmp_path, case):
    schema, columns, rows = CASES[case]
    path = tmp_path / f"{case}.parquet"
    pc.write(path, schema, columns, rows)
    theirs = pq.read_table(path)
    ours = read(path)
    assert str(ours.schema.field("col").type) == str(theirs.schema.field("col").type)
    assert ours.schema.field("col").nullable == theirs.schema.field("col").nullable
    assert ours.column("col").to_pylist() == theirs.column("col").to_pylist()


def test_a_list_of_lists_is_not_a_list_of_structs(read, tmp_path):
    schema, columns, rows = list_of_lists("array", True)
    path = tmp_path / "lol.parquet"
    pc.write(path, schema, columns, rows)
    assert read(path).column("col").to_pylist() == [[[1, 2], [3, 4]], None, [], [[]]]
