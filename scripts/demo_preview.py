"""Demo: register a Delta table, derive a table with SQL, preview it and
show where the preview's time went."""

import sys

import deltafunnel
from deltafunnel import Session


def main(path):
    print(f"deltafunnel {deltafunnel.__version__}")
    session = Session()
    session.delta_lake(path, name="orders")
    recent = session.table_from_sql(
        "SELECT id, region, status, amount, order_date FROM orders "
        "WHERE amount > 100 AND status = 'shipped'")
    preview = recent.preview(10, execution_profile=True)
    print(preview)
    print("phase timings:")
    for phase in preview.phase_timings:
        micros = phase["elapsed_micros"]
        shown = f"{micros / 1000:.2f} ms" if micros is not None else phase["status"]["kind"]
        print(f"  {phase['phase_name']:<28} {shown}")
    by_region = session.table_from_sql(
        "SELECT region, count(*) AS orders, sum(amount) AS total "
        "FROM orders GROUP BY region ORDER BY total DESC")
    print(by_region.preview(10))


if __name__ == "__main__":
    main(sys.argv[1])
