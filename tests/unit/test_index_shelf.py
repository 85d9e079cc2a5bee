"""The shelf: memories' copies in an unnamed file, read back by row, compacted when mostly garbage."""

from __future__ import annotations

import threading
import zlib
from pathlib import Path

import numpy as np
import pytest

from mnemo.index import shelf as shelf_module
from mnemo.index.shelf import Shelf


def test_what_is_put_is_read_back_the_last_version_wins_and_no_file_is_named(tmp_path: Path) -> None:
    shelf = Shelf(tmp_path / "index")
    shelf.put(0, '{"content": "Tabs"}')
    shelf.put(5000, "¿Por qué? " * 50)
    shelf.put(0, '{"content": "Spaces"}')
    assert shelf.get(0) == '{"content": "Spaces"}'
    assert shelf.get(5000) == "¿Por qué? " * 50
    assert [shelf.get(n) for n in (1, 4999, 5001, 10**9)] == [None] * 4
    assert len(shelf) == 2 and shelf.garbage > 0
    with pytest.raises(ValueError, match="no place for a text under -1"):
        shelf.put(-1, "x")
    assert list((tmp_path / "index").iterdir()) == []  # unlinked: nothing to find, nothing left
    assert (tmp_path / "index").stat().st_mode & 0o777 == 0o700
    shelf.close()


def test_a_batch_puts_in_order_and_counts_what_it_replaces_or_drops_as_garbage(tmp_path: Path) -> None:
    shelf = Shelf(tmp_path)
    shelf.put_many([(0, "one"), (1, "two"), (0, "three")])
    assert (shelf.get(0), shelf.get(1), len(shelf)) == ("three", "two", 2)
    first_garbage = shelf.garbage
    assert first_garbage > 0  # "one" was replaced within the batch
    shelf.put_many([(1, "four"), (2, "five"), (3, "six")])
    assert (shelf.get(1), shelf.get(2), len(shelf)) == ("four", "five", 4)
    assert shelf.garbage > first_garbage
    dropped = shelf.garbage
    shelf.drop([2, 2, 7])  # twice, and a number holding nothing: each text counted once
    assert (shelf.get(2), len(shelf)) == (None, 3)
    assert shelf.garbage == dropped + len(zlib.compress(b"five", 1))
    assert shelf.holds(np.asarray([0, 1, 2, 3, 4, -1])).tolist() == [True, True, False, True, False, False]
    shelf.drop([3])
    shelf.settle()  # the room past the last number holding a text is given back
    assert len(shelf._lengths) == 2
    assert [shelf.get(n) for n in range(4)] == ["three", "four", None, None]
    shelf.close()


def test_a_saved_shelf_is_read_back_with_its_places_and_a_wrong_one_is_refused(tmp_path: Path) -> None:
    shelf = Shelf(tmp_path)
    shelf.put_many([(0, "zero"), (3, "three"), (4, "four")])
    shelf.drop([3])
    arrays = shelf.save(tmp_path / "saved.bin")
    again = Shelf.restored(tmp_path, tmp_path / "saved.bin", arrays)
    assert [again.get(n) for n in range(5)] == ["zero", None, None, None, "four"]
    assert (len(again), again.garbage) == (2, shelf.garbage)
    with pytest.raises(ValueError, match="places and lengths differ"):
        Shelf.restored(tmp_path, tmp_path / "saved.bin", {**arrays, "lengths": arrays["lengths"][:-1]})
    with pytest.raises(ValueError, match="past the end"):
        Shelf.restored(tmp_path, tmp_path / "saved.bin", {**arrays, "offsets": arrays["offsets"] + 100})


def test_once_garbage_outweighs_the_live_versions_they_move_to_a_fresh_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shelf_module, "_COMPACT_MIN_BYTES", 0)
    shelf = Shelf(tmp_path)
    texts = {i: f"version 0 of memory {i} " * 20 for i in range(50)}
    for number, text in texts.items():
        shelf.put(number, text)
    for round_ in range(1, 6):
        for i in range(0, 50, 2):  # half the memories change, again and again
            texts[i] = f"version {round_} of memory {i} " * 20
            shelf.put(i, texts[i])
        # Compacted whenever garbage passed the live bytes: never more garbage than live.
        assert shelf.garbage <= shelf._end - shelf.garbage
    shelf.drop(range(40, 50))  # a drop compacts too
    assert shelf.garbage <= shelf._end - shelf.garbage
    assert {n: shelf.get(n) for n in texts} == {n: (t if n < 40 else None) for n, t in texts.items()}


def test_readers_and_writers_on_threads_read_whole_versions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shelf_module, "_COMPACT_MIN_BYTES", 0)  # compactions under the readers too
    shelf = Shelf(tmp_path)
    for i in range(20):
        shelf.put(i, f"{i}:0:" + "x" * 200)
    problems: list[str] = []

    def write() -> None:
        for version in range(1, 200):
            for i in range(20):
                shelf.put(i, f"{i}:{version}:" + "x" * 200)

    def read() -> None:
        for _ in range(2000):
            for i in range(20):
                got = shelf.get(i)
                if got is None or not got.startswith(f"{i}:") or not got.endswith("x" * 200):
                    problems.append(repr(got))

    threads = [threading.Thread(target=write), *(threading.Thread(target=read) for _ in range(3))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert problems == []
    assert shelf.get(7) == "7:199:" + "x" * 200
