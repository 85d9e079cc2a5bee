"""The ``git`` binary, asked with a timeout: answers or None, never an exception.

Every caller treats None as "no git here": a missing binary, a directory that is not a
repository, a broken one, a call past its time. Output is read as bytes and split on NUL where
git offers ``-z``, so no path is misread.
"""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from mnemo.workspace import git_dirs

logger = logging.getLogger(__name__)
TIMEOUT_S = 2.0
# Up to this many paths are named to ls-tree; more, and the whole tree is listed.
_ARGS_PER_CALL = 200


def git(
    root: Path, args: Sequence[str], *, timeout_s: float = TIMEOUT_S, stdin: bytes | None = None
) -> bytes | None:
    """``git -C root args…``'s stdout (``stdin`` fed to it), or None (no git, not a repository,
    an error, too slow)."""
    binary = shutil.which("git")
    if binary is None:
        return None
    try:
        done = subprocess.run(
            # No optional locks: a check never blocks (or is blocked by) the person's own git.
            [binary, "--no-optional-locks", "-C", str(root), *args],
            input=stdin if stdin is not None else b"",
            capture_output=True,
            timeout=timeout_s,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        logger.debug("git %s in %s: %s", args[0] if args else "", root, exc)
        return None
    if done.returncode != 0:
        logger.debug("git %s in %s: %s", args[0] if args else "", root, done.stderr[:200])
        return None
    return done.stdout


def head(root: Path) -> str | None:
    """The commit HEAD names (None: no commit yet, or no git). Read from the repository's files
    when they are the plain kind (a loose or packed branch, or a detached HEAD), so that a check
    whose HEAD did not move spawns nothing; asked of git otherwise."""
    if shutil.which("git") is None:
        return None
    found = _head_from_files(root)
    if found is not None:
        return found
    out = git(root, ["rev-parse", "--verify", "-q", "HEAD"])
    text = out.decode("ascii", "replace").strip() if out else ""
    return text or None


_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def _head_from_files(root: Path) -> str | None:
    try:
        dirs = git_dirs(root)  # a worktree's HEAD is its own, its branches in the common directory
        if dirs is None:
            return None
        gitdir, common = dirs
        text = (gitdir / "HEAD").read_text().strip()
        if _SHA.fullmatch(text):
            return text
        if not text.startswith("ref: refs/"):
            return None
        ref = text[5:]
        for directory in (gitdir, common):
            if (directory / ref).is_file():
                value = (directory / ref).read_text().strip()
                return value if _SHA.fullmatch(value) else None
        for line in (common / "packed-refs").read_text().splitlines():
            sha, _, name = line.partition(" ")
            if name == ref and _SHA.fullmatch(sha):
                return sha
    except (OSError, IndexError, UnicodeDecodeError):
        return None
    return None


def blobs(root: Path, commit: str, paths: Sequence[str]) -> dict[str, str] | None:
    """{path: blob id} at ``commit`` for those of ``paths`` that are files there (absent: not in
    that tree). None when git cannot say. Many paths: the whole tree is listed once instead (git
    matches a long pathspec slowly)."""
    if not paths:
        return {}
    if len(paths) > _ARGS_PER_CALL:
        whole = tree(root, commit)
        return None if whole is None else {p: whole[p] for p in paths if p in whole}
    return _listed(git(root, ["ls-tree", "-z", "--full-tree", commit, "--", *paths]))


def tree(root: Path, commit: str) -> dict[str, str] | None:
    """{path: blob id} for every file of ``commit``'s tree."""
    return _listed(git(root, ["ls-tree", "-r", "-z", "--full-tree", commit]))


def _listed(out: bytes | None) -> dict[str, str] | None:
    """``git ls-tree -z`` output as {path: blob id}, its files only."""
    if out is None:
        return None
    found = {}
    for entry in out.split(b"\0"):
        meta, _, raw = entry.partition(b"\t")
        parts = meta.split()
        if len(parts) == 3 and parts[1] == b"blob":
            found[raw.decode("utf-8", "surrogateescape")] = parts[2].decode("ascii")
    return found


def content(root: Path, blob: str, limit: int = 1_000_000) -> str | None:
    """A blob's text (at most ``limit`` bytes), or None."""
    return contents(root, [blob], limit).get(blob)


def contents(root: Path, blobs: Sequence[str], limit: int = 1_000_000) -> dict[str, str]:
    """Many blobs' texts in one ``git cat-file --batch`` (each at most ``limit`` bytes); those git
    cannot give are left out."""
    if not blobs:
        return {}
    out = git(root, ["cat-file", "--batch"], stdin="".join(f"{b}\n" for b in blobs).encode())
    found: dict[str, str] = {}
    at = 0
    while out is not None and at < len(out):
        end = out.find(b"\n", at)
        header = out[at:end].split() if end >= 0 else []
        if len(header) != 3:  # "<blob> missing", or the end
            at = end + 1 if end >= 0 else len(out)
            continue
        size = int(header[2])
        found[header[0].decode("ascii")] = out[end + 1 : end + 1 + min(size, limit)].decode(
            "utf-8", "replace"
        )
        at = end + 1 + size + 1
    return found


def changes_since(root: Path, since: str, limit: int = 50) -> dict[str, list[str]] | None:
    """{path: the commits after ``since`` up to HEAD that changed it, newest first (short ids)},
    from one ``git log`` over at most the newest ``limit`` of those commits."""
    out = git(root, ["log", f"-n{limit}", "-z", "--name-only", "--format=%x01%h", f"{since}..HEAD"])
    if out is None:
        return None
    changed: dict[str, list[str]] = {}
    for entry in out.split(b"\x01")[1:]:
        commit, _, names = entry.partition(b"\0")  # "<id>\0\n<path>\0<path>\0…"
        for name in names.lstrip(b"\n").split(b"\0"):
            if name:
                path = name.decode("utf-8", "surrogateescape")
                changed.setdefault(path, []).append(commit.decode("ascii", "replace"))
    return changed


def renames(root: Path, since: str) -> dict[str, str] | None:
    """{old path: new path} for the files renamed between ``since`` and HEAD."""
    out = git(root, ["diff", "-z", "--name-status", "-M", "--diff-filter=R", since, "HEAD"])
    if out is None:
        return None
    fields = out.split(b"\0")
    moved: dict[str, str] = {}
    i = 0
    while i + 2 < len(fields):
        if fields[i].startswith(b"R"):
            old, new = fields[i + 1], fields[i + 2]
            moved[old.decode("utf-8", "surrogateescape")] = new.decode("utf-8", "surrogateescape")
            i += 3
        else:
            i += 2
    return moved


def files_naming(root: Path, commit: str, names: Sequence[str]) -> dict[str, set[str]] | None:
    """{name: the files of ``commit`` that hold it as a whole word} for ``names``, from one
    ``git grep`` (text files only)."""
    if not names:
        return {}
    patterns = [arg for name in names for arg in ("-e", name)]
    out = git(root, ["grep", "-o", "-w", "-F", "-z", "-I", *patterns, commit, "--"])
    if out is None:  # no match is an exit code of 1, too: nothing holds them
        return {}
    found: dict[str, set[str]] = {}
    prefix = f"{commit}:".encode()
    for line in out.split(b"\n"):
        where, _, match = line.partition(b"\0")
        if where.startswith(prefix) and match:
            path = where[len(prefix) :].decode("utf-8", "surrogateescape")
            found.setdefault(match.decode("utf-8", "replace"), set()).add(path)
    return found
