"""What code a memory is about, found when it is written.

In a git workspace, a memory is anchored to the tracked files it names ("timeout_sec in lb.tf",
"server/app.py") and to those its source episodes' tool calls read or edited (the call's first
line: ``Read {"file_path": "/srv/shop/lb.tf"}``). A name that is no path of HEAD's tree is matched
by its base name when exactly one tracked file has it. For each file: its blob at HEAD, the
identifiers the memory names that the file holds (``timeout_sec``), and the numbers it names
that the file holds (``600``) — so that a later check can say whether they are still there.
Outside a repository, or when git cannot answer, there is no anchor, never an error.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath

from mnemo.code import git
from mnemo.episodes import Episode, Role
from mnemo.memories import AnchoredFile, CodeAnchor
from mnemo.workspace import repo_root

MAX_FILES = 8
MAX_SYMBOLS = 8
MAX_VALUES = 4
# A path-like token: a path with directories (a/b/c, /srv/a/b.py), or a name with an extension
# (lb.tf). Not a URL, not a version (3.11), not an e-mail address.
_PATH = re.compile(r"(?<![\w/.@:-])(/?(?:[\w.-]+/)+[\w.-]+|[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,9})(?![\w/@])")
_IDENTIFIER = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]{2,80}\b")
_NUMBER = re.compile(r"(?<![\w.])\d{2,}(?:\.\d+)?(?![\w.])")


def named_paths(texts: Iterable[str]) -> list[str]:
    """Path-like tokens in ``texts``, in order, once each."""
    found: dict[str, None] = {}
    for text in texts:
        for match in _PATH.finditer(text):
            token = match.group(1).rstrip(".")
            if "://" not in text[max(0, match.start() - 8) : match.start() + 3]:
                found.setdefault(token, None)
    return list(found)


def _symbols(texts: Sequence[str]) -> list[str]:
    """Identifiers that look like code: snake_case, SCREAMING_CASE, camelCase."""
    found: dict[str, None] = {}
    for text in texts:
        for token in _IDENTIFIER.findall(text):
            if "_" in token or (token[0].islower() and any(c.isupper() for c in token[1:])):
                found.setdefault(token, None)
    return list(found)


def _resolve(names: Sequence[str], root: Path, cwd: Path, tracked: Sequence[str]) -> list[str]:
    """The tracked paths (relative to ``root``) that ``names`` mean."""
    paths = set(tracked)
    by_base: dict[str, list[str]] = {}
    for path in tracked:
        by_base.setdefault(PurePosixPath(path).name, []).append(path)
    try:
        here = cwd.resolve().relative_to(root.resolve())
    except ValueError:
        here = Path()
    out: dict[str, None] = {}
    for name in names:
        candidates = []
        raw = Path(name)
        if raw.is_absolute():
            try:
                candidates.append(raw.resolve().relative_to(root.resolve()).as_posix())
            except (ValueError, OSError):
                continue
        else:
            candidates += [(here / name).as_posix(), PurePosixPath(name).as_posix()]
        exact = next((c for c in candidates if c in paths), None)
        if exact is None and len(by_base.get(PurePosixPath(name).name, [])) == 1:
            exact = by_base[PurePosixPath(name).name][0]
        if exact is not None:
            out.setdefault(exact, None)
    return list(out)[:MAX_FILES]


def anchor_distilled(texts: Sequence[str], sources: Sequence[Episode]) -> CodeAnchor | None:
    """The anchor of a distilled memory: the files ``texts`` (its W) name or its tool sources'
    calls touched, in the checkout its sources were recorded in."""
    cwd = next((e.cwd for e in sources if e.cwd), "")
    calls = [e.text.split("\n", 1)[0] for e in sources if e.role is Role.TOOL]
    return anchor(cwd, texts, calls)


def anchor(cwd: str, memory_texts: Sequence[str], source_calls: Sequence[str] = ()) -> CodeAnchor | None:
    """The anchor of a memory written with ``cwd`` as the working directory: the files
    ``memory_texts`` (its content and six W) name and ``source_calls`` (its tool episodes' call
    lines) touched, at HEAD. None outside a repository, without a commit, or naming no file."""
    if not cwd:
        return None
    root = repo_root(Path(cwd))
    if root is None:
        return None
    commit = git.head(root)
    names = named_paths([*memory_texts, *source_calls])
    if commit is None or not names:
        return None
    tracked = git.tree(root, commit)
    if not tracked:
        return None
    paths = _resolve(names, root, Path(cwd), list(tracked))
    return anchor_at(root, commit, memory_texts, paths, {p: tracked[p] for p in paths})


def anchor_at(
    root: Path,
    commit: str,
    memory_texts: Sequence[str],
    paths: Sequence[str],
    blobs: dict[str, str] | None = None,
) -> CodeAnchor | None:
    """The anchor to ``paths`` (relative to ``root``) at ``commit``: each file's blob (``blobs``,
    when the caller has read them already) and the symbols and values ``memory_texts`` name that
    it holds. None when none of them is there."""
    found = blobs
    if found is None and paths:
        found = git.blobs(root, commit, list(dict.fromkeys(paths))[:MAX_FILES])
    if not found:
        return None
    symbols = _symbols(memory_texts)
    numbers = list(dict.fromkeys(_NUMBER.findall(" ".join(memory_texts))))
    texts = git.contents(root, sorted(set(found.values())))
    files = []
    for path in dict.fromkeys(paths):
        if path not in found:
            continue
        text = texts.get(found[path], "")
        named = [s for s in symbols if s in text and s not in path][:MAX_SYMBOLS]
        values = [v for v in numbers if re.search(rf"(?<![\w.]){re.escape(v)}(?![\w.])", text)][:MAX_VALUES]
        files.append(AnchoredFile(path=path, blob=found[path], symbols=named, values=values))
    return CodeAnchor(commit=commit, files=files[:MAX_FILES]) if files else None
