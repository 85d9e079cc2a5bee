"""The memories' image built by a process of its own, from the pages the daemon sends it.

Built inside the daemon, the memories' index leaves the daemon's heap larger than the index: a
build parses every memory and lets go of most of what it made, what it keeps lies scattered among
what it let go, and neither Python's small-object allocator nor glibc's malloc can give those
pages back: a daemon that built its index holds more than one that read the same index from its
image (measured in docs/benchmarks/recall.md, "Memory at a million"). So a first start over a large store (no
image yet, or one that did not check out) sends the store's memories and their vectors to
``python -m mnemo.index.image_build``, which builds the index as the daemon would, saves it as
the image (:mod:`mnemo.index.image`) and exits, its heap with it; the daemon then reads the image
as at any restart (:mod:`mnemo.daemon.indexing`).

The daemon stays the store's one reader (an embedded store is one process's): the child reads
pickled frames from its parent on its stdin —

    ("spec", {directory, source, model, weights})   first: what to build, and where
    ("memories", [memory JSON, …])                   a page of memories, each its current version
    ("vectors", [(owner, part), …], matrix)           stored vectors of the active model, float32
    ("save", cursor)                                  finish, save the image taken at ``cursor``

— and prints one line of JSON once saved: memories, what was done with their vector lists, bytes
written, and the seconds from "save" to the image saved (the lists made, the image written). It
must run with the daemon's string hash salt (the image finds its keys by hash, and the daemon
reads no image salted otherwise). Input that ends before "save" exits non-zero with nothing
written, as does any failure (the reason on stderr), and the daemon then builds the index itself.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import pickle
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from mnemo.index.image import Cursor
from mnemo.index.live import RecallEngine
from mnemo.index.ranking import Weights
from mnemo.memories import Memory

_STDERR_TAIL = 2_000  # characters of the child's stderr quoted when it fails


class ImageBuildError(Exception):
    """The child did not save the image (the daemon builds the index itself)."""


class ImageBuild:
    """The daemon's end: start the child, send it pages, wait for its image. Blocking calls, for
    a worker thread. ``env``: the child's environment (the daemon's own, hash salt included)."""

    def __init__(
        self, directory: Path, source: str, model: str, weights: Weights, env: Mapping[str, str]
    ) -> None:
        spec = {
            "directory": str(directory),
            "source": source,
            "model": model,
            "weights": dataclasses.asdict(weights),
        }
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - held until the child has exited
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "mnemo.index.image_build"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                env=dict(env),
            )
        except BaseException as exc:
            self._stderr.close()
            if isinstance(exc, OSError):
                raise ImageBuildError(f"cannot start the image build: {exc}") from None
            raise
        self._send(("spec", spec))  # on its stdin, not its command line, which anyone may read

    def send_memories(self, memories: Sequence[Memory]) -> None:
        self._send(("memories", [memory.model_dump_json() for memory in memories]))

    def send_vectors(self, keys: list[tuple[str, int]], matrix: npt.NDArray[np.float32]) -> None:
        self._send(("vectors", keys, matrix))

    def finish(self, cursor: Cursor) -> dict[str, Any]:
        """Have the image saved as taken at ``cursor``; the child's summary once it has exited."""
        self._send(("save", cursor))
        stdin, stdout = self._pipes()
        try:
            stdin.close()
            out = stdout.read()
        except OSError:  # the child is gone: its exit code and stderr say why
            out = b""
        if self._process.wait() != 0:
            raise self._failed()
        self._close()
        try:
            summary: dict[str, Any] = json.loads(out)
        except ValueError:
            raise ImageBuildError(f"the image build said {out[:200]!r}") from None
        return summary

    def abort(self) -> None:
        """Stop the child (it writes nothing when its input ends before "save")."""
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()
        self._close()

    def _send(self, frame: tuple[Any, ...]) -> None:
        stdin, _ = self._pipes()
        try:
            pickle.dump(frame, stdin, protocol=pickle.HIGHEST_PROTOCOL)
        except OSError:  # the child is gone (BrokenPipeError): its stderr says why
            self._process.wait()
            raise self._failed() from None

    def _failed(self) -> ImageBuildError:
        self._stderr.seek(0)
        said = self._stderr.read().decode(errors="replace").strip()[-_STDERR_TAIL:]
        self._close()
        return ImageBuildError(
            f"the image build exited with {self._process.returncode}" + (f": {said}" if said else "")
        )

    def _close(self) -> None:
        for pipe in self._pipes():
            with contextlib.suppress(OSError):  # what the gone child never read is dropped
                pipe.close()
        self._stderr.close()

    def _pipes(self) -> tuple[IO[bytes], IO[bytes]]:
        stdin, stdout = self._process.stdin, self._process.stdout
        assert stdin is not None and stdout is not None  # both are pipes (PIPE above)
        return stdin, stdout


def build(frames: IO[bytes]) -> dict[str, Any]:
    """The child's work: build the memories' index from ``frames`` and save its image."""
    match _next(frames):
        case ("spec", dict(spec)):
            pass
        case other:
            raise ImageBuildError(f"the first frame is not the spec: {str(other)[:80]!r}")
    directory = Path(spec["directory"])
    engine = RecallEngine(None, directory, model=(spec["model"], Weights(**spec["weights"])))
    while True:
        match frame := _next(frames):
            case ("memories", list(texts)):
                engine.add_memories([Memory.model_validate_json(text) for text in texts], bulk=True)
            case ("vectors", list(keys), np.ndarray() as matrix):
                engine.load_vectors(keys, matrix)
            case ("save", tuple(cursor)):
                started = time.monotonic()
                # The lists an earlier run saved are adopted where they fit, as in place.
                lists = engine.finish_build(directory)
                written = engine.save_image(directory, spec["source"], cursor)
                return {
                    "memories": len(engine.memories),
                    "lists": lists[0],  # what was done with the memories' vector lists
                    "bytes": written,
                    "finish_s": round(time.monotonic() - started, 1),  # lists made, image saved
                }
            case _:
                raise ImageBuildError(f"unknown frame {str(frame)[:80]!r}")


def _next(frames: IO[bytes]) -> Any:
    try:
        return pickle.load(frames)
    except EOFError:
        raise ImageBuildError("the daemon's input ended before the image was to be saved") from None


def main() -> int:
    try:
        summary = build(sys.stdin.buffer)
    except (ImageBuildError, OSError, ValueError) as exc:
        sys.stderr.write(f"mnemo image build: {exc}\n")
        return 1
    sys.stdout.write(json.dumps(summary) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
