from os import PathLike
from pathlib import Path
from typing import Any, ClassVar, Literal, Mapping, Sequence, TypeAlias, TypedDict, overload

__version__: str

LoadMode: TypeAlias = Literal["append_existing", "create_and_load", "replace"]
WriteAllCacheMode: TypeAlias = Literal["auto", "explicit", "disabled"]
Report: TypeAlias = dict[str, object]
Options: TypeAlias = Mapping[str, object]

class WriteAllExecutionOptions(TypedDict, total=False):
    cache_mode: WriteAllCacheMode
    cache_aliases: Sequence[str]
    cache_memory_budget_bytes: int  # ours: beyond it, cached batches spill to disk
    cache_spill_directory: str      # ours: where spill files go (default $TMPDIR)
    parallel_connections: int       # ours: bulk connections per staged output (1..16)

class ColumnDescription(TypedDict):
    index: int
    name: str
    arrow_type: str
    nullable: bool

class FileRepartitioning:
    FILL_MISSING_PARALLELISM: ClassVar[FileRepartitioning]
    REBALANCE: ClassVar[FileRepartitioning]
    def __int__(self) -> int: ...

class ProviderScanOptions:
    @property
    def max_concurrent_file_reads_per_scan(self) -> int | None: ...
    @property
    def max_concurrent_file_reads_per_partition(self) -> int: ...
    @property
    def output_buffer_capacity_per_partition(self) -> int: ...
    @property
    def native_async_prefetch_file_count_per_partition(self) -> int: ...
    @property
    def parquet_metadata_size_hint(self) -> int | None: ...
    @property
    def parquet_full_file_read_threshold(self) -> int | None: ...
    @property
    def intra_file_repartitioning(self) -> FileRepartitioning: ...
    @property
    def use_view_types(self) -> bool: ...
    def __init__(
        self,
        *,
        max_concurrent_file_reads_per_scan: int | None = None,
        max_concurrent_file_reads_per_partition: int = 3,
        output_buffer_capacity_per_partition: int = 1,
        native_async_prefetch_file_count_per_partition: int = 2,
        parquet_metadata_size_hint: int | None = 65_536,
        parquet_full_file_read_threshold: int | None = None,
        intra_file_repartitioning: FileRepartitioning | None = None,
        use_view_types: bool = False,
    ) -> None: ...

def init_logging(filter: str | None = None, logger: str = "deltafunnel") -> bool: ...
def init_perfetto_diagnostics(
    filter: str | None = None,
    logger: str = "deltafunnel",
    wait_timeout_seconds: float = 10.0,
) -> bool: ...
def _run_perfetto_cli() -> int: ...

class DeltaFunnelError(Exception):
    phase: str
    kind: str
    message: str
    context: object | None
    offset: int | None
    code: int

class RankedProfileConfig:
    @property
    def report_path(self) -> Path: ...
    @property
    def sample_hz(self) -> Literal[100, 1000]: ...
    @property
    def artifact_path(self) -> Path | None: ...
    @property
    def max_operator_activity_spans(self) -> int: ...
    def __init__(
        self,
        report_path: str | PathLike[str],
        *,
        sample_hz: Literal[100, 1000] = 1000,
        artifact_path: str | PathLike[str] | None = None,
        max_operator_activity_spans: int = 100_000,
    ) -> None: ...

class Session:
    def __init__(
        self,
        *,
        default_mssql_connection_string: str | None = None,
        target_partitions: int | None = None,
        output_batch_size: int | None = None,
        provider_scan_options: ProviderScanOptions | None = None,
        validation_options: Options | None = None,
        schema_options: Options | None = None,
    ) -> None: ...
    @overload
    def delta_lake(
        self,
        source_uri: str,
        *,
        version: int | None = None,
        storage_options: Mapping[str, str] | None = None,
        name: str,
        progress: bool | None = None,
    ) -> Table: ...
    @overload
    def delta_lake(
        self,
        source_uri: str,
        *,
        version: int | None = None,
        storage_options: Mapping[str, str] | None = None,
        name: None = None,
        progress: bool | None = None,
    ) -> PendingDeltaSource: ...
    def table_from_sql(self, sql: str) -> Table: ...
    def write_all(
        self,
        outputs: Sequence[MssqlOutputSpec],
        *,
        options: WriteAllExecutionOptions | None = None,
        dry_run: bool | None = None,
        progress: bool | None = None,
        execution_profile: bool = False,
        ranked_profile: RankedProfileConfig | None = None,
    ) -> Report: ...
    def write_all_for_stream_benchmark(
        self,
        outputs: Sequence[MssqlOutputSpec],
        *,
        options: WriteAllExecutionOptions | None = None,
        execution_profile: bool = False,
        ranked_profile: RankedProfileConfig | None = None,
    ) -> Report: ...

class PendingDeltaSource:
    def alias(self, name: str, *, progress: bool | None = None) -> Table: ...

class Preview:
    @property
    def text(self) -> str: ...
    @property
    def html(self) -> str: ...
    @property
    def phase_timings(self) -> list[dict[str, object]]: ...
    @property
    def execution_profile(self) -> dict[str, object] | None: ...
    def __str__(self) -> str: ...
    def _repr_html_(self) -> str: ...

class Table:
    @property
    def schema(self) -> list[ColumnDescription]: ...
    def alias(self, name: str) -> Table: ...
    def preview(
        self,
        limit: int = 20,
        *,
        progress: bool | None = None,
        execution_profile: bool = False,
        ranked_profile: RankedProfileConfig | None = None,
    ) -> Preview: ...
    def show(self, limit: int = 20, *, progress: bool | None = None) -> None: ...
    def to_arrow(self) -> Any: ...
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...
    def to_mssql(
        self,
        *,
        schema: str,
        table: str,
        load_mode: LoadMode,
        name: str | None = None,
        connection_string: str | None = None,
    ) -> MssqlOutputSpec: ...
    def write_to_mssql(
        self,
        *,
        schema: str,
        table: str,
        load_mode: LoadMode,
        dry_run: bool | None = None,
        name: str | None = None,
        connection_string: str | None = None,
        progress: bool | None = None,
        execution_profile: bool = False,
        ranked_profile: RankedProfileConfig | None = None,
        parallel_connections: int | None = None,
    ) -> Report: ...

class MssqlOutputSpec:
    def __repr__(self) -> str: ...
