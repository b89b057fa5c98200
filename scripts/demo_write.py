"""Demo: load query results into SQL Server.

    python scripts/demo_write.py DELTA_TABLE

Writes to the SQL Server named by the connection string in
$DELTAFUNNEL_MSSQL, or, when it is unset, to the loopback peer
(`mssql-peer`, installed with the package) started on 127.0.0.1 for the
demo.  Shows a dry run, a `replace` load with its report and a ranked
profile report of where its time went (HTML, written beside the table), and
a write_all of two outputs that share one cached alias, with progress on
stderr.  The peer's temporary database is removed at the end.
"""

import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import deltafunnel


def start_peer():
    """Starts mssql-peer on a free loopback port; returns (process, connection string)."""
    here = pathlib.Path(__file__).resolve().parent.parent
    binary = shutil.which("mssql-peer") or next(
        (str(p) for p in sorted(here.glob("build*/programs/mssql-peer/mssql-peer"))), None)
    if not binary:
        raise SystemExit("mssql-peer not found: install the package or set DELTAFUNNEL_MSSQL")
    password = "Demo-" + os.urandom(6).hex()
    db = tempfile.NamedTemporaryFile(prefix="demo-peer-", suffix=".db", delete=False).name
    proc = subprocess.Popen([binary, "--port", "0", "--login", f"demo:{password}", "--db", db, "--max-seconds", "600"],
                            stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()
    if not line.startswith("listening "):
        proc.kill()
        raise SystemExit(f"mssql-peer did not start: {line}")
    host, port = line.split(" ", 1)[1].rsplit(":", 1)
    return proc, db, f"server=tcp:{host},{port};user id=demo;password={password};TrustServerCertificate=true"


def show(report):
    stats = report["write_stats"]
    print(f"  {report['output_name']}: {stats['rows_written']:,} rows in {stats['batches_written']} batches, "
          f"{stats['elapsed_ms']} ms; validation {report['validation_status']['kind']}; "
          f"target rows {report['target_row_count']['value']}")


def main(path):
    conn = os.environ.get("DELTAFUNNEL_MSSQL")
    peer = peer_db = None
    report_path = pathlib.Path(path).resolve().parent / "shipped_orders.profile.html"
    if not conn:
        peer, peer_db, conn = start_peer()
        print("writing to the loopback SQL Server peer (set DELTAFUNNEL_MSSQL to use a real server)")
    try:
        session = deltafunnel.Session(default_mssql_connection_string=conn)
        session.delta_lake(path, name="orders")
        shipped = session.table_from_sql(
            "SELECT id, region, status, amount, order_date FROM orders WHERE status = 'shipped'").alias("shipped")

        plan = shipped.write_to_mssql(schema="dbo", table="shipped_orders", load_mode="replace", dry_run=True)
        print(f"dry run: {plan['status']['kind']}, {plan['target_schema_plan']['output_field_count']} columns, "
              f"SQL Server contacted: {plan['dry_run']['sql_server_contacted']}")

        print("replace dbo.shipped_orders:")
        show(shipped.write_to_mssql(schema="dbo", table="shipped_orders", load_mode="replace", progress=True,
                                    execution_profile=True,
                                    ranked_profile=deltafunnel.RankedProfileConfig(report_path)))
        print(f"  where the time went, ranked: {report_path}")

        by_region = session.table_from_sql(
            "SELECT region, COUNT(*) AS orders, SUM(amount) AS total FROM shipped GROUP BY region")
        big = session.table_from_sql("SELECT id, amount FROM shipped WHERE amount > 500")
        report = session.write_all([
            by_region.to_mssql(schema="dbo", table="shipped_by_region", load_mode="replace"),
            big.to_mssql(schema="dbo", table="big_shipped_orders", load_mode="replace"),
        ], progress=True)
        print(f"write_all: {report['succeeded_count']} succeeded, {report['failed_count']} failed; "
              f"cache {report['cache']['kind']} {[a['alias'] for a in report['cache']['aliases']]}")
        for out in report["workflow"]["outputs"]:
            show(out["report"])
    finally:
        if peer:
            peer.terminate()
            peer.wait(10)
        if peer_db:
            for leftover in pathlib.Path(peer_db).parent.glob(pathlib.Path(peer_db).name + "*"):
                leftover.unlink(missing_ok=True)  # the database and any SQLite journal beside it


if __name__ == "__main__":
    main(sys.argv[1])
