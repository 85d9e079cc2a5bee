"""mnemo.health's duplicates on evidence written by hand: which of a pair is kept, and that each
text is embedded once however many pairs it is in. The whole audit through the daemon, the CLI
and the page is in tests/daemon/test_audit.py and tests/e2e/test_audit_panel.py."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import numpy.typing as npt

from mnemo.api.audit import FINDING_KINDS
from mnemo.cli.parser import AUDIT_KINDS  # kept apart: the CLI starts without pydantic
from mnemo.health import Evidence, audit
from mnemo.memories import Memory
from mnemo.vocabulary import MemoryStatus
from tests.helpers import make_memory

NOW = datetime(2026, 12, 1, tzinfo=UTC)
DAY = timedelta(days=1)


def _evidence(memories: list[Memory], embedded: list[str]) -> Evidence:
    def embed(texts: Sequence[str]) -> npt.NDArray[np.float32]:
        embedded.extend(texts)
        return np.ones((len(texts), 4), dtype=np.float32) / 2.0  # unit vectors, all alike

    ids = [m.id for m in memories]
    return Evidence(memories=memories, sources={}, injected={}, used={}, code_flags={}, now=NOW, days=30,
                    neighbours=lambda m: [i for i in ids if i != m.id], embed=embed)  # fmt: skip


def test_an_active_memory_is_kept_before_an_older_one_still_waiting() -> None:
    waiting = make_memory(
        "m-old", "The shop deploys on Thursdays", NOW - 2 * DAY, status=MemoryStatus.CANDIDATE
    )
    active = make_memory("m-new", "The shop deploys on Thursdays.", NOW - DAY)
    [found] = audit(_evidence([waiting, active], []), ["duplicate"])
    assert found.memories == ["m-new", "m-old"] and found.action == "merge"  # the waiting one folds in
    older = make_memory("m-older", "The shop deploys on Thursdays!", NOW - 3 * DAY)
    [first, *_] = audit(_evidence([active, older], []), ["duplicate"])
    assert first.memories == ["m-older", "m-new"]  # both active: the older is kept


def test_each_text_is_embedded_once_and_pairs_with_few_words_shared_not_at_all() -> None:
    memories = [
        make_memory("m-1", "Orders are cached in Redis for ten minutes", NOW - 3 * DAY),
        make_memory("m-2", "Orders are cached in Redis for ten minutes at most", NOW - 2 * DAY),
        make_memory("m-3", "Orders get cached in Redis for ten minutes", NOW - DAY),
        make_memory("m-4", "The release train leaves every second Monday", NOW - DAY),
    ]
    embedded: list[str] = []
    found = audit(_evidence(memories, embedded), ["duplicate"])
    assert len(embedded) == len(set(embedded)) == 3  # m-4 shares too few words with any to be asked
    assert {tuple(f.memories) for f in found} == {("m-1", "m-2"), ("m-1", "m-3"), ("m-2", "m-3")}


def test_the_command_line_knows_the_same_kinds_as_the_api() -> None:
    assert AUDIT_KINDS == FINDING_KINDS


def test_one_statement_at_two_values_is_superseded_but_two_files_are_two_statements() -> None:
    memories = [
        make_memory("m-120", "The uploads ALB idle timeout is 120 s", NOW - 2 * DAY),
        make_memory("m-600", "The uploads ALB idle timeout is 600 s", NOW - DAY),
        make_memory("m-a", "Strict mode is enabled in src/app/config.ts since v2", NOW - 2 * DAY),
        make_memory("m-b", "Strict mode is enabled in src/lib/legacy.ts since v3", NOW - DAY),
    ]
    found = audit(_evidence(memories, []), ["superseded"])
    assert [(f.memories, f.action) for f in found] == [(["m-600", "m-120"], "close")]
