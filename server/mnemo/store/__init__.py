"""The store: the only code that talks to ClickHouse (embedded chDB or a server).

:func:`open_store` picks the backend from the DSN; both run the same SQL through
clickhouse-connect. Only the daemon opens the store (chDB allows one process per directory).
"""

from mnemo.store.clickhouse import ClickHouseStore, ModelUsage, StoreCounts, open_store

__all__ = ["ClickHouseStore", "ModelUsage", "StoreCounts", "open_store"]
