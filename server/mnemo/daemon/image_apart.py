"""A first start's memories' index, built by a process of its own from the store's pages.

The daemon reads the store (it is the embedded store's one reader) and sends each page of
memories, then their vectors, to :mod:`mnemo.index.image_build`, which saves the index as the
image the daemon then reads (:mod:`mnemo.daemon.indexing`). What the build freed leaves with that
process instead of staying in the daemon's heap.
"""

from __future__ import annotations

import functools
import logging
import time
from pathlib import Path

import anyio
import anyio.to_thread

from mnemo.daemon.storecalls import StoreCalls
from mnemo.index.image import Cursor
from mnemo.index.image_build import ImageBuild, ImageBuildError
from mnemo.index.live import RecallEngine
from mnemo.paths import salted_alike

logger = logging.getLogger(__name__)


async def build_image_apart(
    calls: StoreCalls,
    engine: RecallEngine,
    directory: Path,
    source: str,
    cursor: Cursor,
    *,
    pages: int,
    least: int,
) -> str | None:
    """Have the memories' image of ``source`` built apart, as taken at ``cursor``, ``pages`` rows
    a page; once saved, what was done with their vector lists (for status), else None. Not tried
    below ``least`` memories, or when this process's string hash is not its user's (a child could
    not hash alike); a failure is logged and left to the caller, which builds in place. A store
    error stops the child and is raised."""
    env = salted_alike(str(directory))
    if env is None:
        return None
    # The child reads no settings: a store password and the like stay out of its environment.
    env = {name: value for name, value in env.items() if not name.startswith("MNEMO_")}
    store = calls.store
    count = await calls(store.memory_count)
    if count < least:
        return None
    started = time.monotonic()
    make = functools.partial(ImageBuild, directory, source, engine.model_id, engine.memories.weights, env)
    try:
        child = await anyio.to_thread.run_sync(make)
    except ImageBuildError as exc:
        logger.warning("%s: the index is built in the daemon", exc)
        return None
    logger.info("building the index of %d memories in a process of its own", count)
    try:
        after = ""
        while memories := await calls(store.memories_page, after, pages):
            await anyio.to_thread.run_sync(child.send_memories, memories)
            after = memories[-1].id
        if engine.embedder is not None:
            model = engine.embedder.model_id
            async for keys, matrix in calls.embedding_pages(model, pages, owners="memories"):
                await anyio.to_thread.run_sync(child.send_vectors, keys, matrix)
        summary = await anyio.to_thread.run_sync(child.finish, cursor)
    except ImageBuildError as exc:
        logger.warning("%s: the index is built in the daemon", exc)
        return None
    except BaseException:
        child.abort()
        raise
    logger.info(
        "index image built apart in %.1f s (lists made and image saved in %s s): %s memories, %.0f MB",
        time.monotonic() - started,
        summary.get("finish_s"),
        summary.get("memories"),
        summary.get("bytes", 0) / 1e6,
    )
    return str(summary.get("lists", "memories: lists made apart"))
