"""The entities table: each known entity's name and aliases, keyed by its folded name."""

from __future__ import annotations

from collections.abc import Sequence

from mnemo.clock import utc_now
from mnemo.store.connection import Tables


class EntityTables(Tables):
    def upsert_entities(self, entities: Sequence[tuple[str, str, Sequence[str]]]) -> None:
        """Record (key, name, aliases) entities; known ones gain the aliases they lacked."""
        wanted: dict[str, tuple[str, set[str]]] = {}
        for key, name, new_aliases in entities:
            _, gathered = wanted.setdefault(key, (name, set()))
            gathered.update(a for a in new_aliases if a)
        if not wanted:
            return
        with self._db.translated("reading entities"):
            known = {
                row[0]: (int(row[1]), row[2], list(row[3]), row[4])
                for row in self._db.current_rows(
                    "entities",
                    ("id", "version", "name", "aliases", "created_at"),
                    "id IN {ids:Array(String)}",
                    {"ids": list(wanted)},
                    "id",
                    len(wanted),
                )
            }
        now = utc_now()
        rows = []
        for key, (name, aliases) in wanted.items():
            if key not in known:
                rows.append([key, 1, name, sorted(aliases), now, now])
                continue
            version, known_name, had, created_at = known[key]
            if not aliases <= set(had):
                rows.append([key, version + 1, known_name, sorted(aliases | set(had)), created_at, now])
        if rows:
            with self._db.translated("writing entities"):
                self._db.insert(
                    "entities",
                    rows,
                    column_names=["id", "version", "name", "aliases", "created_at", "updated_at"],
                )

    def entities(self, keys: Sequence[str]) -> list[tuple[str, str, list[str]]]:
        """(key, name, aliases) of each of the entities ``keys`` that is known, by key."""
        if not keys:
            return []
        rows = self._db.current_rows(
            "entities",
            ("id", "name", "aliases"),
            "id IN {ids:Array(String)}",
            {"ids": list(keys)},
            "id",
            len(keys),
        )
        return [(row[0], row[1], sorted(row[2])) for row in rows]

    def all_entities(self) -> list[tuple[str, str, list[str]]]:
        """(key, name, aliases) of every known entity."""
        rows = self._db.current_rows("entities", ("id", "name", "aliases"), "1", {}, "id", 10_000_000)
        return [(row[0], row[1], list(row[2])) for row in rows]
