"""The episodes table: what the hooks, the MCP tools and imports recorded, never changed once stored."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from mnemo.episodes import AppendResult, Episode
from mnemo.store.connection import Connection, Tables

_SEQUENCE = "toUnixTimestamp64Micro(committed_at)"
EPISODE_COLUMNS = (
    "id", "kind", "text", "who", "role", "namespace", "session", "turn", "time", "received_at",
    "client", "workspace", "cwd", "branch", "host",
)  # fmt: skip


def read_episodes(
    db: Connection, where: str, parameters: dict[str, Any], order: str, limit: int
) -> list[Episode]:
    """Episodes matching ``where`` (SQL over :data:`EPISODE_COLUMNS`), in ``order``."""
    rows = db.current_rows("episodes", EPISODE_COLUMNS, where, parameters, order, limit)
    return [Episode.model_validate(dict(zip(EPISODE_COLUMNS, row, strict=True))) for row in rows]


class EpisodeTables(Tables):
    def append_episodes(self, episodes: Sequence[Episode]) -> list[AppendResult]:
        """Store the episodes whose ids are not stored yet, in one insert; report which were new,
        and which ids are stored already with another text (kept as stored: episodes never
        change; whether that is an error is the caller's to say)."""
        if not episodes:
            return []
        self._db.check_writable([e.namespace for e in episodes], "an episode")
        ids = [e.id for e in episodes]
        with self._db.translated("checking episode ids"):
            digests: dict[str, str] = dict(
                self._db.query(
                    "SELECT id, lower(hex(SHA256(text))) FROM episodes WHERE id IN {ids:Array(String)}",
                    parameters={"ids": ids},
                ).result_rows
            )
        results, rows = [], []
        for episode in episodes:
            digest = hashlib.sha256(episode.text.encode("utf-8", "surrogatepass")).hexdigest()
            stored = digests.get(episode.id)
            if stored is None:
                digests[episode.id] = digest
                results.append(AppendResult(id=episode.id, is_new=True))
                rows.append([getattr(episode, c) for c in EPISODE_COLUMNS])
            else:
                results.append(AppendResult(id=episode.id, is_new=False, is_changed=stored != digest))
        if rows:
            with self._db.translated(f"inserting {len(rows)} episodes"):
                self._db.insert("episodes", rows, column_names=list(EPISODE_COLUMNS))
        return results

    def get_episodes(self, ids: Sequence[str]) -> list[Episode]:
        return read_episodes(
            self._db, "id IN {ids:Array(String)}", {"ids": list(ids)}, "time, id", len(ids) or 1
        )

    def session_episodes(
        self,
        session: str,
        *,
        from_turn: int | None,
        to_turn: int | None,
        namespace: str | None,
        limit: int,
    ) -> list[Episode]:
        where, params = ["session = {session:String}"], {"session": session}
        if from_turn is not None:
            where.append("turn >= {from_turn:UInt32}")
            params["from_turn"] = from_turn  # type: ignore[assignment]
        if to_turn is not None:
            where.append("turn <= {to_turn:UInt32}")
            params["to_turn"] = to_turn  # type: ignore[assignment]
        if namespace is not None:
            where.append("namespace = {namespace:String}")
            params["namespace"] = namespace
        return read_episodes(self._db, " AND ".join(where), params, "ifNull(turn, 0), time, id", limit)

    def episode_namespaces(self) -> dict[str, int]:
        """How many episodes each namespace holds."""
        return self._db.by_namespace("episodes")

    def episode_changes(self, after: tuple[int, str], limit: int) -> list[tuple[tuple[int, str], Episode]]:
        """Episodes committed after ``after`` (the store's µs, id), in commit order, at most
        ``limit``: what other daemons recorded, for an index to follow (migration 16)."""
        where, parameters = self._db.scoped(
            f"({_SEQUENCE}, id) > ({{t:Int64}}, {{id:String}})",
            {"t": after[0], "id": after[1]},
        )
        sql = (
            f"SELECT {', '.join(EPISODE_COLUMNS)}, {_SEQUENCE} AS seq FROM episodes "
            f"WHERE {where} ORDER BY seq, id LIMIT 1 BY id LIMIT {limit:d}"
        )
        with self._db.translated("reading episode changes"):
            rows = self._db.query(sql, parameters=parameters).result_rows
        return [
            ((int(r[-1]), str(r[0])), Episode.model_validate(dict(zip(EPISODE_COLUMNS, r[:-1], strict=True))))
            for r in rows
        ]

    def episodes_page(self, after: str, limit: int, namespace: str | None = None) -> list[Episode]:
        """Episodes with ids after ``after`` (in ``namespace`` if given), in id order: keyset pages
        for the index build and the export."""
        if namespace is None:
            return read_episodes(self._db, "id > {after:String}", {"after": after}, "id", limit)
        where = "id > {after:String} AND namespace = {ns:String}"
        return read_episodes(self._db, where, {"after": after, "ns": namespace}, "id", limit)
