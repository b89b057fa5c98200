"""Tables as Arrow data: Table.to_arrow() and the PyCapsule stream give the
same rows as pyarrow and the deltalake package reading the same table."""

import pytest

pa = pytest.importorskip("pyarrow")

import deltafunnel


def sort_by_id(table, key="id"):
    return table.sort_by([(key, "ascending")])


def test_to_arrow_matches_deltalake_on_a_datagen_table(session, mixed_table):
    deltalake = pytest.importorskip("deltalake")
    ours = session.delta_lake(str(mixed_table), name="orders").to_arrow()
    theirs = deltalake.DeltaTable(str(mixed_table)).to_pyarrow_table()
    assert ours.num_rows == theirs.num_rows == 5000
    theirs = theirs.select(ours.column_names)
    ours_sorted, theirs_sorted = sort_by_id(ours), sort_by_id(theirs)
    for name in ours.column_names:
        a = ours_sorted.column(name)
        b = theirs_sorted.column(name)
        if a.type != b.type:
            b = b.cast(a.type)
        assert a.equals(b), name


def test_datagen_files_are_plain_parquet_for_pyarrow(mixed_table):
    import pyarrow.dataset as ds
    data = ds.dataset(str(mixed_table), format="parquet", partitioning="hive").to_table()
    assert data.num_rows == 5000
    assert data.schema.field("amount").type == pa.decimal128(12, 2)
    assert data.schema.field("updated_at").type == pa.timestamp("us", tz="UTC")


def test_arrow_capsule_stream_is_zero_copy_and_reusable(session, mixed_table):
    t = session.delta_lake(str(mixed_table), name="orders")
    capsule = t.__arrow_c_stream__()
    reader = pa.RecordBatchReader._import_from_c_capsule(capsule)
    rows = sum(batch.num_rows for batch in reader)
    assert rows == 5000
    assert pa.table(t).num_rows == 5000
    q = session.table_from_sql("SELECT region, count(*) AS n FROM orders GROUP BY region ORDER BY region")
    result = q.to_arrow()
    assert result.column("n").to_pylist() == [2500, 2500]


def test_to_arrow_matches_pyarrow_on_a_deltalake_table(session, demo_table):
    deltalake = pytest.importorskip("deltalake")
    ours = session.delta_lake(str(demo_table), name="orders").to_arrow()
    theirs = deltalake.DeltaTable(str(demo_table)).to_pyarrow_table()
    assert ours.num_rows == 4
    for name in ["id", "name", "amount", "d", "flag", "bin"]:
        a, b = ours.column(name), theirs.column(name)
        if a.type != b.type:
            b = b.cast(a.type)
        assert a.to_pylist() == b.to_pylist(), name


def test_schema_is_available_without_pyarrow(session, events_table):
    t = session.delta_lake(str(events_table), name="events")
    schema = t.schema
    assert schema[0] == {"index": 0, "name": "event_id", "arrow_type": "Int64", "nullable": False}
    assert {c["name"]: c["arrow_type"] for c in schema}["event_date"] == "Date32"
