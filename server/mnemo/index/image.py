"""A search index saved whole between daemon runs, read back at the next start instead of rebuilt.

Building the memories' index from the store reads, parses and tokenises every memory: minutes at
a million. The daemon therefore saves the index itself — its rows and bitmaps, BM25's postings,
the vectors' codes and lists, the shelf of memories' current versions, the entity forms they
name — with the store's commit cursor of the moment, and the next start reads that back in
seconds and applies only what the store committed after the cursor (:mod:`mnemo.daemon.indexing`).

Files, in ``<index dir>/<name>.image/``:

    <part>.<array>.npy   each array, as numpy writes it
    meta.json            strings: bitmaps' names, statuses, namespaces, owners, entity forms
    shelf.bin            the shelf's file (each memory's current version, compressed)
    manifest.json        format, model, source (store and person), cursor, hash probe, rows,
                         and each file's sha256

An image is written whole to ``<name>.image.new`` and then renamed into place, so a save cut short
leaves the previous image (or none). One that does not check out — another format, model, store
or person, a file whose hash differs, parts that do not fit together — is not read: the index is
built from the store, as without one. The directory is private to the user (0700), as the store's
is.

Keys and terms are found by Python's string hash, which is salted per process: an image is only
of use to a process salted alike. The daemon runs with its user's own salt (``PYTHONHASHSEED``,
:mod:`mnemo.daemon`); the manifest records the hash of a probe string, and a process whose hash
of it differs reads no image.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from pyroaring import BitMap

from mnemo.index.snapshot import file_sha256

FORMAT = 2
_PROBE = "mnemo index image"
_MANIFEST = "manifest.json"
_META = "meta.json"
SHELF_FILE = "shelf.bin"

logger = logging.getLogger(__name__)

Cursor = tuple[int, str, int]


def hash_probe() -> int:
    """This process's hash of the probe string: equal in processes salted alike."""
    return hash(_PROBE)


def _save(path: Path, value: npt.NDArray[Any] | list[npt.NDArray[Any]]) -> None:
    """An array as a .npy file; a list of arrays as the one they make end to end, written part by
    part (the vectors' codes: most of the index, not copied again to be saved)."""
    if not isinstance(value, list):
        np.save(path, np.ascontiguousarray(value), allow_pickle=False)
        return
    shape = (sum(len(part) for part in value), *value[0].shape[1:])
    with path.open("wb") as out:
        np.lib.format.write_array_header_1_0(
            out,
            {"descr": np.lib.format.dtype_to_descr(value[0].dtype), "fortran_order": False, "shape": shape},
        )
        for part in value:
            out.write(np.ascontiguousarray(part, dtype=value[0].dtype).data)


def _pack_bitmaps(
    families: dict[str, dict[Any, BitMap]],
) -> tuple[dict[str, npt.NDArray[Any]], dict[str, Any]]:
    """Bitmaps by family as one byte array and end offsets per family, and their names (a tuple
    name as a list)."""
    arrays: dict[str, npt.NDArray[Any]] = {}
    names: dict[str, Any] = {}
    for family, maps in families.items():
        blobs = [m.serialize() for m in maps.values()]
        arrays[f"{family}.data"] = np.frombuffer(b"".join(blobs), dtype=np.uint8)
        arrays[f"{family}.ends"] = np.cumsum([len(b) for b in blobs], dtype=np.int64)
        names[family] = [list(k) if isinstance(k, tuple) else k for k in maps]
    return arrays, names


def _unpack_bitmaps(
    arrays: dict[str, npt.NDArray[Any]], names: dict[str, Any]
) -> dict[str, dict[Any, BitMap]]:
    families: dict[str, dict[Any, BitMap]] = {}
    for family, keys in names.items():
        data, ends = arrays[f"{family}.data"].tobytes(), arrays[f"{family}.ends"].tolist()
        if len(ends) != len(keys) or (ends and ends[-1] != len(data)):
            raise ValueError(f"bitmaps of {family}: names and data differ")
        starts = [0, *ends][: len(ends)]
        families[family] = {
            tuple(k) if isinstance(k, list) else k: BitMap.deserialize(data[a:b])
            for k, a, b in zip(keys, starts, ends, strict=True)
        }
    return families


@dataclass(frozen=True, slots=True)
class LoadedImage:
    """What an image held: the index's parts (see ``SearchIndex.saved``), the shelf's places and
    the path of its file, the entity forms, and the store cursor it was taken at."""

    parts: dict[str, Any]
    shelf: dict[str, npt.NDArray[Any]]
    shelf_path: Path
    forms: dict[str, list[str]]
    cursor: Cursor
    saved_at: datetime
    rows: int


class IndexImage:
    """The saved image of one search index (``name``) made with one embedding model (or none)
    from one store as read by one person (``source``: an image of another is not read)."""

    def __init__(self, directory: Path, name: str, model: str, source: str) -> None:
        self.directory = directory
        self.name = name
        self.model = model
        self.source = source

    @property
    def path(self) -> Path:
        return self.directory / f"{self.name}.image"

    def write(
        self,
        parts: dict[str, Any],
        shelf_save: Callable[[Path], dict[str, npt.NDArray[Any]]],
        forms: dict[str, list[str]],
        cursor: Cursor,
    ) -> int:
        """Write an image of ``parts`` (the caller holds the index's lock throughout), the shelf
        (``shelf_save(path)`` copies its file there and gives its places), ``forms`` and
        ``cursor``; the bytes written."""
        saved_at = datetime.now(UTC)
        new = self.directory / f"{self.name}.image.new"
        shutil.rmtree(new, ignore_errors=True)
        new.mkdir(mode=0o700, parents=True)
        shelf = shelf_save(new / SHELF_FILE)  # first: its versions are never newer than the index's
        bitmaps, names = _pack_bitmaps(parts["bitmaps"])
        arrays = {
            **{f"rows.{k}": v for k, v in parts["rows"].items()},
            **{f"bitmaps.{k}": v for k, v in bitmaps.items()},
            **{f"lexical.{k}": v for k, v in parts["lexical"].items()},
            **{f"shelf.{k}": v for k, v in shelf.items()},
        }
        groups: list[str] | None = None
        if parts["vectors"] is not None:
            vector_arrays, groups = parts["vectors"]
            arrays.update({f"vectors.{k}": v for k, v in vector_arrays.items()})
        for key, array in arrays.items():
            _save(new / f"{key}.npy", array)
        meta = {"bitmaps": names, "rest": parts["rest"], "groups": groups, "forms": forms}
        (new / _META).write_text(json.dumps(meta, ensure_ascii=False), encoding="utf-8")
        files = sorted(p.name for p in new.iterdir())
        manifest = {
            "format": FORMAT,
            "model": self.model,
            "source": self.source,
            "cursor": list(cursor),
            "saved_at": saved_at.isoformat(),
            "hash_probe": hash_probe(),
            "rows": len(parts["rows"]["key_ends"]),
            "files": {f: file_sha256(new / f) for f in files},
        }
        (new / _MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
        written = sum((new / f).stat().st_size for f in files)
        old = self.directory / f"{self.name}.image.old"
        shutil.rmtree(old, ignore_errors=True)
        if self.path.exists():
            self.path.rename(old)
        new.rename(self.path)
        shutil.rmtree(old, ignore_errors=True)
        return written

    def remove(self) -> None:
        """Drop the image (the index it describes is being rebuilt)."""
        shutil.rmtree(self.path, ignore_errors=True)

    def read(self) -> LoadedImage | None:
        """The image's contents, or None when there is none or it does not check out (a warning
        says why)."""
        try:
            manifest = json.loads((self.path / _MANIFEST).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            logger.warning(
                "index image %s unreadable (%s): the index is built from the store", self.path, exc
            )
            return None
        try:
            return self._read(manifest)
        except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
            logger.warning("index image %s ignored (%s): the index is built from the store", self.path, exc)
            return None

    def _read(self, manifest: dict[str, Any]) -> LoadedImage | None:
        if manifest.get("format") != FORMAT:
            raise ValueError(f"format {manifest.get('format')!r}, this version reads {FORMAT}")
        if manifest.get("model") != self.model:
            raise ValueError(f"made with model {manifest.get('model')!r}, the index uses {self.model!r}")
        if manifest.get("source") != self.source:
            raise ValueError(f"made from {manifest.get('source')!r}, the index reads {self.source!r}")
        if manifest.get("hash_probe") != hash_probe():
            raise ValueError("written by a process with another string hash salt (PYTHONHASHSEED)")
        files: dict[str, str] = manifest["files"]
        for name, digest in files.items():
            if file_sha256(self.path / name) != digest:
                raise ValueError(f"{name} does not match its hash")
        meta = json.loads((self.path / _META).read_text(encoding="utf-8"))
        arrays: dict[str, dict[str, npt.NDArray[Any]]] = {}
        for name in files:
            if name.endswith(".npy"):
                part, key = name[: -len(".npy")].split(".", 1)
                arrays.setdefault(part, {})[key] = np.load(self.path / name, allow_pickle=False)
        vectors = arrays.get("vectors")
        parts = {
            "rows": arrays["rows"],
            "bitmaps": _unpack_bitmaps(arrays["bitmaps"], meta["bitmaps"]),
            "rest": meta["rest"],
            "lexical": arrays["lexical"],
            "vectors": None if vectors is None else (vectors, [str(g) for g in meta["groups"]]),
        }
        cursor = manifest["cursor"]
        return LoadedImage(
            parts=parts,
            shelf=arrays["shelf"],
            shelf_path=self.path / SHELF_FILE,
            forms={str(k): [str(f) for f in v] for k, v in meta["forms"].items()},
            cursor=(int(cursor[0]), str(cursor[1]), int(cursor[2])),
            saved_at=datetime.fromisoformat(manifest["saved_at"]),
            rows=int(manifest["rows"]),
        )
