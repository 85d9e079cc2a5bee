"""The curated sets of ``keep``: every version of each set, the newest being the set.

A set is small (at most 2,200 characters), so each edit writes the whole set as a new version;
older versions stay as its history. The daemon serialises edits of one set, so versions never
collide.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from mnemo.clock import as_stored
from mnemo.store.connection import Tables


class KeepTables(Tables):
    def kept(self, owner: str) -> tuple[list[str], int]:
        """The set of ``owner`` (``workspace:…`` or ``person:…``) and its version (0: never written)."""
        self._db.check_writable([owner], "a curated set")  # another person's set is not theirs to read either
        with self._db.translated("reading a curated set"):
            rows = self._db.query(
                "SELECT entries, version FROM kept WHERE owner = {o:String} "
                f"AND {self._db.written('kept')} "
                "ORDER BY version DESC LIMIT 1",
                parameters={"o": owner},
            ).result_rows
        if not rows:
            return [], 0
        return [str(e) for e in rows[0][0]], int(rows[0][1])

    def put_kept(
        self, owner: str, version: int, entries: Sequence[str], action: str, by: str, at: datetime
    ) -> None:
        self._db.check_writable([owner], "a curated set")
        with self._db.translated("writing a curated set"):
            self._db.insert(
                "kept",
                [[owner, version, list(entries), action, by, as_stored(at)]],
                column_names=["owner", "version", "entries", "action", "by", "at"],
            )
