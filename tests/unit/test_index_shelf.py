"""The shelf: memories' copies in an unnamed file, read back by key, compacted when mostly garbage."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from mnemo.index import shelf as shelf_module
from mnemo.index.shelf import Shelf


def test_what_is_put_is_read_back_the_last_version_wins_and_no_file_is_named(tmp_path: Path) -> None:
    shelf = Shelf(tmp_path / "index")
    shelf.put("mem_a", '{"content": "Tabs"}')
    shelf.put("mem_b", "¿Por qué? " * 50)
    shelf.put("mem_a", '{"content": "Spaces"}')
    assert shelf.get("mem_a") == '{"content": "Spaces"}'
    assert shelf.get("mem_b") == "¿Por qué? " * 50
    assert shelf.get("mem_c") is None
    assert len(shelf) == 2 and shelf.garbage > 0
    assert list((tmp_path / "index").iterdir()) == []  # unlinked: nothing to find, nothing left
    assert (tmp_path / "index").stat().st_mode & 0o777 == 0o700
    shelf.close()


def test_a_batch_puts_in_order_and_counts_what_it_replaces_as_garbage(tmp_path: Path) -> None:
    shelf = Shelf(tmp_path)
    shelf.put_many([("mem_a", "one"), ("mem_b", "two"), ("mem_a", "three")])
    assert (shelf.get("mem_a"), shelf.get("mem_b"), len(shelf)) == ("three", "two", 2)
    first_garbage = shelf.garbage
    assert first_garbage > 0  # "one" was replaced within the batch
    shelf.put_many([("mem_b", "four"), ("mem_c", "five")])
    assert (shelf.get("mem_b"), shelf.get("mem_c"), len(shelf)) == ("four", "five", 3)
    assert shelf.garbage > first_garbage
    shelf.settle()
    assert [shelf.get(k) for k in ("mem_a", "mem_b", "mem_c")] == ["three", "four", "five"]
    shelf.close()


def test_once_garbage_outweighs_the_live_versions_they_move_to_a_fresh_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shelf_module, "_COMPACT_MIN_BYTES", 0)
    shelf = Shelf(tmp_path)
    texts = {f"mem_{i}": f"version 0 of memory {i} " * 20 for i in range(50)}
    for key, text in texts.items():
        shelf.put(key, text)
    for round_ in range(1, 6):
        for i in range(0, 50, 2):  # half the memories change, again and again
            texts[f"mem_{i}"] = f"version {round_} of memory {i} " * 20
            shelf.put(f"mem_{i}", texts[f"mem_{i}"])
        # Compacted whenever garbage passed the live bytes: never more garbage than live.
        assert shelf.garbage <= shelf._end - shelf.garbage
    assert {key: shelf.get(key) for key in texts} == texts


def test_readers_and_writers_on_threads_read_whole_versions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shelf_module, "_COMPACT_MIN_BYTES", 0)  # compactions under the readers too
    shelf = Shelf(tmp_path)
    for i in range(20):
        shelf.put(f"mem_{i}", f"{i}:0:" + "x" * 200)
    problems: list[str] = []

    def write() -> None:
        for version in range(1, 200):
            for i in range(20):
                shelf.put(f"mem_{i}", f"{i}:{version}:" + "x" * 200)

    def read() -> None:
        for _ in range(2000):
            for i in range(20):
                got = shelf.get(f"mem_{i}")
                if got is None or not got.startswith(f"{i}:") or not got.endswith("x" * 200):
                    problems.append(repr(got))

    threads = [threading.Thread(target=write), *(threading.Thread(target=read) for _ in range(3))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert problems == []
    assert shelf.get("mem_7") == "7:199:" + "x" * 200
