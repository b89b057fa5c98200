"""Delta Funnel: read Delta Lake tables, transform them with SQL and preview
the results (SQL Server bulk loads come with a later release).

    import deltafunnel

    session = deltafunnel.Session()
    orders = session.delta_lake("/data/orders", name="orders")
    recent = session.table_from_sql("SELECT id, amount FROM orders WHERE amount > 100")
    print(recent.preview(10))

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
