"""Delta Funnel: read Delta Lake tables, transform them with SQL, preview
the results and bulk-load them into SQL Server.

    import deltafunnel

    session = deltafunnel.Session()
    orders = session.delta_lake("/data/orders", name="orders")
    recent = session.table_from_sql("SELECT id, amount FROM orders WHERE amount > 100")
    print(recent.preview(10))
    report = recent.write_to_mssql(schema="dbo", table="recent_orders", load_mode="replace",
                                   connection_string="server=tcp:host,1433;user id=...;password=...")

Tables also implement the Arrow PyCapsule interface (``__arrow_c_stream__``),
so ``pyarrow.table(t)``, ``polars.from_arrow(t)`` or ``t.to_arrow()`` read
their batches without copies.
"""

from ._native import (
    DeltaFunnelError,
    FileRepartitioning,
    MssqlOutputSpec,
    PendingDeltaSource,
    Preview,
    ProviderScanOptions,
    RankedProfileConfig,
    Session,
    Table,
    __version__,
    _run_perfetto_cli,
    init_logging,
    init_perfetto_diagnostics,
)

__all__ = [
    "DeltaFunnelError",
    "init_logging",
    "init_perfetto_diagnostics",
    "_run_perfetto_cli",
    "MssqlOutputSpec",
    "RankedProfileConfig",
    "FileRepartitioning",
    "ProviderScanOptions",
    "Session",
    "PendingDeltaSource",
    "Preview",
    "Table",
    "__version__",
]
