"""What code a memory is about, found when it is written.

In a git workspace, a memory is anchored to the tracked files it names ("timeout_sec in lb.tf",
"server/app.py", "see the Makefile") and to those its source episodes' tool calls read or edited
(the call's first line: ``Read {"file_path": "/srv/shop/lb.tf"}``). A name that is no path of
HEAD's tree is matched by its base name when exactly one tracked file has it; a file named
without an extension (Makefile, Dockerfile, Procfile) is named by a word equal to its name,
capitalised as the file is — or, for a lower-case name (``justfile``), in backquotes or quotes,
since "deploy" or "build" in prose is not a script — and a file by a name written as code that
is its name without the extension (``PasswordPolicy`` for ``src/PasswordPolicy.java``). A memory
that names no file in these ways is anchored to the files that hold a name it writes as code,
where one or two tracked files hold it (``deploy_production``: ``.gitlab-ci.yml``).

For each file: its blob at HEAD, the identifiers the memory names that the file holds
(``timeout_sec``), and the numbers it names that the file holds (``600``) — so that a later check
can say whether they are still there. Outside a repository, or when git cannot answer, there is
no anchor, never an error.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath

from mnemo.code import git
from mnemo.code.named import holds_symbol, is_code_name, named_symbols, named_values
from mnemo.code.sites import anchors_value
from mnemo.episodes import Episode, Role
from mnemo.memories import AnchoredFile, CodeAnchor
from mnemo.workspace import repo_root

MAX_FILES = 8
MAX_SYMBOLS = 8
MAX_VALUES = 4
MAX_FILES_PER_NAME = 2
# A path-like token: a path with directories (a/b/c, /srv/a/b.py), or a name with an extension
# (lb.tf). Not a URL, not a version (3.11), not an e-mail address.
_PATH = re.compile(
    r"(?<![\w/.@:-])(/?(?:[\w.-]+/)+[\w.-]+|\.?[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,9})(?![\w/@])"
)
_NAME = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]{3,80}\b")
# A word that may be a file named without an extension: capitalised (Makefile, LICENSE), or any
# name in backquotes or quotes (`justfile`).
_BARE_NAME = re.compile(r"(?<![\w./-])([A-Z][\w-]{2,80})(?![\w/-]|\.\w)|[`'\"]([\w-]{3,80})[`'\"]")


def named_paths(texts: Iterable[str]) -> list[str]:
    """Path-like tokens in ``texts``, in order, once each."""
    found: dict[str, None] = {}
    for text in texts:
        for match in _PATH.finditer(text):
            token = match.group(1).rstrip(".")
            if "://" not in text[max(0, match.start() - 8) : match.start() + 3]:
                found.setdefault(token, None)
    return list(found)


def code_names(texts: Iterable[str]) -> list[str]:
    """Names in ``texts`` written as code writes them (PasswordPolicy, backfill_user_emails), which
    may be a file's name without its extension."""
    return list(dict.fromkeys(t for text in texts for t in _NAME.findall(text) if is_code_name(t)))


def bare_names(texts: Iterable[str]) -> list[str]:
    """Words in ``texts`` that may name a file without an extension, in order, once each."""
    found: dict[str, None] = {}
    for text in texts:
        for match in _BARE_NAME.finditer(text):
            found.setdefault(match.group(1) or match.group(2), None)
    return list(found)


def _by_name(tracked: Iterable[str]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The tracked files by name: those named without an extension ({Makefile: paths}), and the
    others by their name without it ({PasswordPolicy: [src/PasswordPolicy.java]})."""
    bare: dict[str, list[str]] = {}
    stems: dict[str, list[str]] = {}
    for path in tracked:
        name = PurePosixPath(path).name
        if "." not in name:
            bare.setdefault(name, []).append(path)
        elif not name.startswith("."):
            stems.setdefault(name.split(".", 1)[0], []).append(path)
    return bare, stems


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
    bare = bare_names(memory_texts)
    coded = code_names(memory_texts)
    if commit is None or not (names or bare or coded):
        return None
    tracked = git.tree(root, commit)
    if not tracked:
        return None
    paths = _resolve(names, root, Path(cwd), list(tracked))
    # A file named by its name alone: Makefile, or a code name equal to its stem (PasswordPolicy
    # for src/PasswordPolicy.java), where exactly one tracked file has it.
    bare_files, stems = _by_name(tracked)
    for files in (*(bare_files.get(n) for n in bare), *(stems.get(n) for n in coded)):
        if files is not None and len(files) == 1 and files[0] not in paths:
            paths.append(files[0])
    if not paths and coded:
        # Named by what it holds: a code name found in one or two tracked files (deploy_production
        # in .gitlab-ci.yml); one in more is too common a name to tell which file is meant.
        holding = git.files_naming(root, commit, coded[:MAX_SYMBOLS]) or {}
        for name in coded:
            files = sorted(holding.get(name, ()))
            if 0 < len(files) <= MAX_FILES_PER_NAME:
                paths += [f for f in files if f not in paths]
    paths = paths[:MAX_FILES]
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
    symbols = named_symbols(memory_texts)
    numbers = named_values(memory_texts)
    said = " ".join(memory_texts)
    texts = git.contents(root, sorted(set(found.values())))
    files = []
    for path in dict.fromkeys(paths):
        if path not in found:
            continue
        text = texts.get(found[path], "")
        named = [s for s in symbols if holds_symbol(text, s) and s not in path][:MAX_SYMBOLS]
        values = [v for v in numbers if anchors_value(text, v, said)][:MAX_VALUES]
        files.append(AnchoredFile(path=path, blob=found[path], symbols=named, values=values))
    return CodeAnchor(commit=commit, files=files[:MAX_FILES]) if files else None
