"""The daemon's side of ``keep``: edits of the curated sets, one at a time, and their imports.

The rules of an edit and the budgets are :mod:`mnemo.keep`'s; this applies them to the stored
set under a lock (an edit reads the set, changes it and writes the next version), refuses
credentials, and says whose set a scope means: ``project`` is the workspace the client names,
``user`` the active person.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio

from mnemo.api.keep import KeepImportRequest, KeepRequest, KeepResult, KeptSet, KeptSets
from mnemo.clock import utc_now
from mnemo.config import Settings
from mnemo.errors import InputError, OverBudgetError
from mnemo.injected import refuse_unfit
from mnemo.keep import BUDGET_CHARS, Edit, apply, normalise, used_chars
from mnemo.secrets import refuse_unkeepable
from mnemo.store import Store
from mnemo.vocabulary import KeepScope

CallStore = Callable[..., Awaitable[Any]]


class KeepSets:
    def __init__(self, store: Store, settings: Settings, call_store: CallStore) -> None:
        self._store = store
        self._settings = settings
        self._call_store = call_store
        self._lock = anyio.Lock()

    def owner(self, scope: KeepScope, workspace: str | None) -> str:
        if scope is KeepScope.USER:
            return self._settings.namespace_of_person
        if not workspace:
            raise InputError(
                "workspace: the project scope needs the workspace (workspace:<id>); the MCP server "
                "and the CLI send the one of their working directory"
            )
        return workspace

    async def get(self, scope: KeepScope, owner: str) -> KeptSet:
        entries, version = await self._call_store(self._store.kept, owner)
        return _kept_set(scope, owner, entries, version)

    async def sets(self, workspace: str | None) -> KeptSets:
        project = await self.get(KeepScope.PROJECT, workspace) if workspace else None
        user = await self.get(KeepScope.USER, self._settings.namespace_of_person)
        return KeptSets(project=project, user=user)

    async def edit(self, request: KeepRequest) -> KeepResult:
        owner = self.owner(request.scope, request.workspace)
        refuse_unkeepable(request.content, "content")
        async with self._lock:
            entries, version = await self._call_store(self._store.kept, owner)
            edit = Edit(request.action, request.content, request.old_text)
            changed, said = apply(entries, edit, request.scope)
            if changed != entries:
                version += 1
                await self._write(owner, version, changed, request.action.value)
        return KeepResult(message=said, kept=_kept_set(request.scope, owner, changed, version))

    async def import_project(self, request: KeepImportRequest) -> KeepResult:
        """Make ``request.entries`` (read from the repository's file) the workspace's set."""
        entries = list(dict.fromkeys(e for e in (normalise(e) for e in request.entries) if e))
        budget = BUDGET_CHARS[KeepScope.PROJECT]
        if used_chars(entries) > budget:
            raise OverBudgetError(
                f"the file's entries hold {used_chars(entries):,} characters; the project budget is "
                f"{budget:,}. Nothing was imported: shorten or merge entries in the file and import again"
            )

        def check() -> None:  # off the event loop: detection reads every line
            for number, entry in enumerate(entries, start=1):
                refuse_unfit(entry, f"entry {number}")
                refuse_unkeepable(entry, f"entry {number}")

        await anyio.to_thread.run_sync(check)
        async with self._lock:
            current, version = await self._call_store(self._store.kept, request.workspace)
            if current == entries:
                said = "the project set already matches the file; nothing changed"
            else:
                version += 1
                await self._write(request.workspace, version, entries, "import")
                said = f"imported {len(entries)} entries into the project set"
        kept = _kept_set(KeepScope.PROJECT, request.workspace, entries, version)
        return KeepResult(message=said, kept=kept)

    async def _write(self, owner: str, version: int, entries: Sequence[str], action: str) -> None:
        await self._call_store(
            self._store.put_kept, owner, version, entries, action, self._settings.person, utc_now()
        )


def _kept_set(scope: KeepScope, owner: str, entries: Sequence[str], version: int) -> KeptSet:
    return KeptSet(
        scope=scope,
        owner=owner,
        entries=list(entries),
        used_chars=used_chars(entries),
        budget_chars=BUDGET_CHARS[scope],
        version=version,
    )
