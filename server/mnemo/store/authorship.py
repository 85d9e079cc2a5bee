"""Who wrote each row, stamped by the store, and the rule by which a row counts.

Every table that holds a person's or a workspace's rows has a column ``written_by``, MATERIALIZED
``currentUser()`` (migration 15): a server fills it at the insert with the user it authenticated
and refuses an INSERT that names it, so a client cannot write as someone else. A row counts only
when the user who wrote it may write where the row is:

- a ``person:<name>`` row: only when ``<name>`` wrote it (a person's daemon writes their memories,
  episodes, curated sets and hook rows; no one else's daemon can read them to write them);
- a workspace granted to some members (``mnemo server setup --workspace ID=ana,ben``): only when
  one of them or the writer's user (``--writer``) wrote it;
- any other workspace: whoever the server lets insert (every member and the writer);
- a row written before the stamp existed reads ``''`` (a user's name is never empty): it counts,
  as it did.

The server's row policies apply the whole rule (:mod:`mnemo.store.access`); a daemon applies the
parts it can know without the grants, the person rule and the old rows, to every read of a shared
store (:class:`mnemo.store.connection.Connection`). Both leave a row out *before* a memory's
versions fold (a ``PREWHERE`` on ``FINAL`` reads; the policies with
``apply_row_policy_after_final = 0``), so a forged newer version is not read and the memory reads
as its last genuine version.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

STAMP = "written_by"
# The tables with a stamp, each with the column that says whose (a namespace or a person).
STAMPED_TABLES: Mapping[str, str] = {
    "memories": "namespace",
    "memories_staged": "namespace",
    "memory_history": "namespace",
    "episodes": "namespace",
    "distill_batches": "namespace",
    "judge_log": "namespace",
    "kept": "owner",
    "sessions": "person",
    "injections": "person",
    "usage_verdicts": "person",
}


def quote_name(name: str) -> str:
    """A ClickHouse identifier in backquotes."""
    return "`" + name.replace("\\", "\\\\").replace("`", "\\`") + "`"


def quote_text(text: str) -> str:
    """A ClickHouse string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def written_condition(
    column: str,
    workspaces: Mapping[str, Sequence[str]] | None = None,
    writers: Sequence[str] = (),
) -> str:
    """The rows whose writer may write where they are, by ``column`` (a namespace, or a person's
    ``person:<name>``). Without ``workspaces`` (what a daemon knows) every workspace is open."""
    own = f"(startsWith({column}, 'person:') AND {column} = concat('person:', {STAMP}))"
    parts = [f"{STAMP} = ''", own]
    if not workspaces:
        parts.append(f"NOT startsWith({column}, 'person:')")
        return "(" + " OR ".join(parts) + ")"
    restricted = ", ".join(quote_text(f"workspace:{w}") for w in sorted(workspaces))
    parts.append(f"(NOT startsWith({column}, 'person:') AND {column} NOT IN ({restricted}))")
    for workspace, members in sorted(workspaces.items()):
        users = ", ".join(quote_text(u) for u in sorted({*members, *writers}))
        parts.append(f"({column} = {quote_text(f'workspace:{workspace}')} AND {STAMP} IN ({users}))")
    return "(" + " OR ".join(parts) + ")"
