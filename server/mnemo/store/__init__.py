"""The store: the only code that talks to ClickHouse (embedded chDB or a server).

:class:`Store` is what the layers above use; :func:`open_store` opens its implementation,
:class:`ClickHouseStore`, picking the backend from the DSN (both run the same SQL through
clickhouse-connect). Only the daemon opens the store (chDB allows one process per directory).
"""

from mnemo.store.clickhouse import ClickHouseStore, open_store
from mnemo.store.protocol import ModelUsage, Store, StoreCounts

__all__ = ["ClickHouseStore", "ModelUsage", "Store", "StoreCounts", "open_store"]
