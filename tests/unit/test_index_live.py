"""The live recall engine shared by threads: writers change it while recalls read it."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import numpy as np
import pytest

from mnemo.config import load_settings
from mnemo.embed import load_embedder
from mnemo.embed.fallback import FALLBACK_ID
from mnemo.index.documents import memory_document
from mnemo.index.entities import entity_key
from mnemo.index.live import RecallEngine
from mnemo.memories import EntityRef, MemoryStatus
from tests.helpers import Home, frequent_thread_switches, make_memory

NOW = datetime(2026, 11, 30, 15, 0, tzinfo=UTC)
WRITERS, READERS, PER_WRITER = 2, 2, 400


def test_recall_runs_whole_while_threads_add_memories_and_every_entity_added_is_then_found(
    home: Home,
) -> None:
    """Each new entity makes the automaton stale, so every question rebuilds it from the entity
    forms while the writers keep adding to them; each recall must still complete, each memory
    must wait in the embedding backlog once, and once the writers are done the automaton must
    know every entity they added. (With a model: without one there is no backlog.)"""
    engine = RecallEngine(load_embedder(load_settings({**home.env, "MNEMO_EMBEDDER": FALLBACK_ID})))
    start = threading.Barrier(WRITERS + READERS)
    writing_done = threading.Event()
    names = [[f"service{w}n{n}" for n in range(PER_WRITER)] for w in range(WRITERS)]

    def write(w: int) -> None:
        start.wait()
        for n, name in enumerate(names[w]):
            memory = make_memory(
                f"mem-{w}-{n}", f"The {name} deploys on Thursdays.", NOW, entities=[EntityRef(name=name)]
            )
            engine.add_memories([memory])

    def read(r: int) -> list[str]:
        start.wait()
        recalls, taken = 0, []
        while not writing_done.is_set() or recalls < 5:
            question = engine.understand(f"when does service{r}n0 deploy?", NOW)
            engine.search_memories(question, namespaces=None, types=None, force_history=False, limit=5)
            taken += [key for _, key, _ in engine.take_backlog(7)]
            recalls += 1
        return taken

    with frequent_thread_switches(), ThreadPoolExecutor(WRITERS + READERS) as pool:
        readers = [pool.submit(read, r) for r in range(READERS)]
        writers = [pool.submit(write, w) for w in range(WRITERS)]
        for writer in writers:
            writer.result()
        writing_done.set()
        taken = [key for reader in readers for key in reader.result()]

    ids = [f"mem-{w}-{n}" for w in range(WRITERS) for n in range(PER_WRITER)]
    taken += [key for _, key, _ in engine.take_backlog(len(ids) + 1)]
    assert sorted(taken) == sorted(ids)  # each new memory waited for its vector once

    every = [name for per_writer in names for name in per_writer]
    assert set(engine.matcher().find(" and ".join(every))) == {entity_key(name) for name in every}
    last = engine.understand(f"when does {names[-1][-1]} deploy?", NOW)
    found = engine.search_memories(last, namespaces=None, types=None, force_history=False, limit=1)
    assert [f.owner for f in found] == [f"mem-{WRITERS - 1}-{PER_WRITER - 1}"]
    assert all(engine.memory(i) is not None for i in ids)


def test_asked_about_the_past_a_closed_memory_comes_before_the_one_that_closed_it() -> None:
    """The memory that replaced it matches the question's words better (day, deploy, shop), and
    would rank first on its score; but the question asks what was true before."""
    engine = RecallEngine(None)
    engine.add_memories(
        [
            make_memory(
                "tuesday",
                "The shop went out on Tuesdays.",
                NOW,
                status=MemoryStatus.CLOSED,
                closed_by="thursday",
            ),
            make_memory(
                "thursday", "The shop's deploy day is Thursday: we deploy the shop on Thursdays.", NOW
            ),
            make_memory("friday", "No deploys of the shop on Fridays.", NOW, status=MemoryStatus.CLOSED),
        ]
    )

    def ranked(question: str) -> list[str]:
        asked = engine.understand(question, NOW)
        found = engine.search_memories(asked, namespaces=None, types=None, force_history=False, limit=5)
        return [f.key for f in found]

    assert ranked("which day did we deploy the shop before?")[:2] == ["tuesday", "thursday"]
    # Not asked about the past: what is current comes first, the closed ones after it.
    assert ranked("which day do we deploy the shop?")[0] == "thursday"


def test_with_no_model_nothing_waits_for_a_vector() -> None:
    # Words only: a backlog would hold every memory's text, never drained.
    engine = RecallEngine(None)
    engine.add_memories([make_memory(f"m{n}", f"note {n}", NOW) for n in range(50)])
    assert engine.backlog == 0 and engine.take_backlog(100) == []


def test_each_memory_s_copy_follows_its_row_a_new_version_s_replaces_the_old_and_a_close_rewrites_it() -> (
    None
):
    engine = RecallEngine(None)
    engine.add_memories(
        [make_memory("deploy", "We deploy on Tuesdays.", NOW), make_memory("db", "Postgres.", NOW)]
    )
    engine.add_memories([make_memory("deploy", "We deploy on Thursdays.", NOW, version=2)])
    held = engine.memory("deploy")
    assert held is not None and (held.content, held.version) == ("We deploy on Thursdays.", 2)
    shelf = engine.memories._copies
    assert shelf is not None and len(shelf) == 2  # the retired row's copy was dropped
    assert shelf.holds(np.arange(3)).tolist() == [False, True, True]
    closed = held.model_copy(update={"status": MemoryStatus.CLOSED, "version": 3})
    engine.set_memory_status(closed)  # the same row, a new copy
    after = engine.memory("deploy")
    assert after is not None and (after.status, after.version) == (MemoryStatus.CLOSED, 3)
    assert shelf.holds(np.arange(4)).tolist() == [False, True, True, False]
    assert engine.memory("nothing") is None
    with pytest.raises(ValueError, match="a copy of each document, or of none"):
        engine.memories.add([memory_document(make_memory("x", "no copy", NOW))])


def test_a_memory_read_while_its_new_versions_are_written_is_always_one_whole_version() -> None:
    """A new version takes a new row, and its copy is written with it: a reader between the two
    must not find the new row without its copy (a memory gone for a moment)."""
    engine = RecallEngine(None)
    engine.add_memories([make_memory("deploy", "version 0", NOW)])
    done = threading.Event()

    def write() -> None:
        for version in range(1, 400):
            engine.add_memories([make_memory("deploy", f"version {version}", NOW, version=version + 1)])
        done.set()

    def read() -> list[str]:
        seen = []
        while not done.is_set():
            held = engine.memory("deploy")
            seen.append("none" if held is None else held.content)
        return seen

    with frequent_thread_switches(), ThreadPoolExecutor(3) as pool:
        readers = [pool.submit(read) for _ in range(2)]
        pool.submit(write).result()
        seen = [content for reader in readers for content in reader.result()]
    assert seen and all(content.startswith("version ") for content in seen)
    last = engine.memory("deploy")
    assert last is not None and last.content == "version 399"
