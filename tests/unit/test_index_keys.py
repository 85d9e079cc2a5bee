"""Keys by number and numbers by key in arrays (mnemo.index.keys), and the rows on them."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import numpy as np
import pytest

from mnemo.index import rows as rows_module
from mnemo.index.documents import Document, SearchQuery
from mnemo.index.keys import KeyTable
from mnemo.index.rows import RowTable


class Clashing(str):
    """A key whose hash is every other Clashing key's: what a 64-bit hash collision looks like."""

    __slots__ = ()

    def __hash__(self) -> int:
        return 42


def test_every_key_is_found_at_its_newest_number_across_sorts_and_settling() -> None:
    rng = random.Random(3)
    table = KeyTable()
    keys = [f"mem_{i:06d}" for i in range(20_000)] + ["mémoire_é", "记忆", ""]
    newest: dict[str, int] = {}
    for start in range(0, len(keys), 777):  # pages: the recent dict is sorted in several times
        page = keys[start : start + 777]
        page += rng.sample(keys[: start + 3], 3)  # some keys again: they move to a new number
        first = len(table)
        table.append(page)
        for offset, key in enumerate(page):
            newest[key] = first + offset
    assert len(table) == sum(1 for _ in table)
    for key, number in newest.items():
        assert table.get(key) == number and table[number] == key
    asked = [*newest, "never-added", "mem_9"]
    assert table.numbers(asked).tolist() == [*newest.values(), -1, -1]
    table.settle()
    assert all(table.get(k) == n for k, n in newest.items())
    assert table.get("never-added") is None and "mem_000001" in table and "nope" not in table


def test_keys_whose_hashes_collide_are_told_apart_by_their_bytes() -> None:
    table = KeyTable()
    a, b, c = Clashing("alpha"), Clashing("beta"), Clashing("gamma")
    table.append([a, b])
    assert (table.get(a), table.get(b), table.get(c)) == (0, 1, None)
    assert table.append([b, c, a]).tolist() == [1, -1, 0]  # each again, a third on the same hash
    assert (table.get(a), table.get(b), table.get(c)) == (4, 2, 3)
    assert table.numbers([a, b, c, Clashing("delta")]).tolist() == [4, 2, 3, -1]
    table.settle()
    assert (table.get(a), table.get(b), table.get(c)) == (4, 2, 3)


def _document(key: str, owner: str, namespace: str = "workspace:a") -> Document:
    return Document(
        key=key,
        owner=owner,
        text="t",
        namespace=namespace,
        kind="fact",
        status="active",
        time=datetime(2026, 1, 1, tzinfo=UTC),
    )


def test_rows_keep_owners_statuses_and_namespaces_and_a_key_given_twice_in_one_batch_is_live_once() -> None:
    rows = RowTable()
    rows.append(
        [
            _document("ep_1#0", "ep_1"),
            _document("mem_1", "mem_1", "person:ana"),
            _document("odd-key", "someone-else"),  # an owner that is not the key's prefix
            _document("mem_1", "mem_1", "workspace:b"),
        ]
    )
    assert [rows.owner(r) for r in range(4)] == ["ep_1", "mem_1", "someone-else", "mem_1"]
    assert [rows.namespace(r) for r in range(4)] == [
        "workspace:a",
        "person:ana",
        "workspace:a",
        "workspace:b",
    ]
    assert list(rows.live) == [0, 2, 3] and rows.row_of("mem_1") == 3
    assert (
        rows.set_status("mem_1", "closed") == 3 and rows.status(3) == "closed" and rows.status(0) == "active"
    )
    assert rows.set_status("nobody", "closed") is None
    rows.append([_document("ep_1#0", "ep_1")])
    assert list(rows.live) == [2, 3, 4] and rows.live_keys() == ["", "", "odd-key", "mem_1", "ep_1#0"]
    assert np.array_equal(rows.keys.numbers(["ep_1#0", "mem_1"]), [4, 3])


def test_the_filters_masks_kept_are_bounded_by_their_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = RowTable()
    rows.append([_document(f"mem_{i}", f"mem_{i}", f"workspace:w{i % 10}") for i in range(1_000)])
    monkeypatch.setattr(rows_module, "_MAX_CACHED_MASK_BYTES", 3_000)  # three masks of 1,000 rows
    for round_ in range(2):
        for w in range(10):
            allowed, mask = rows.allowed(SearchQuery(terms=[], namespaces=[f"workspace:w{w}"]))
            assert list(allowed) == list(range(w, 1_000, 10)), (round_, w)
            assert np.flatnonzero(mask).tolist() == list(allowed)
            assert len(rows._masks) <= 3
