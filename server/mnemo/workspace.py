"""Which workspace a directory belongs to: ``workspace:<id>``, from the git remote, else the repo root.

The id is the ``origin`` remote (else the first remote) without scheme, credentials or ``.git``
(``git@github.com:org/repo.git`` and ``https://x@github.com/org/repo`` are both
``github.com/org/repo``), so clones of one repository share their memories; a repository without a
remote is its root directory; a directory outside any repository is itself. Read from the files
(no ``git`` process), so that a hook stays fast. A Windows path read on another system (a
transcript recorded there: ``E:\\work\\app``) is its own id, with forward slashes (``E:/work/app``):
no checkout here to read, and never the directory this process happens to run in.
"""

from __future__ import annotations

import configparser
import hashlib
import os
import re
from functools import lru_cache
from pathlib import Path

MAX_ID_CHARS = 120
_SCP_LIKE = re.compile(r"^(?:[^@/\s]+@)?([^:/\s]+):(?!//)(.+)$")
_WINDOWS_PATH = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\[^\\])")  # E:\ or E:/, or \\server\share


def workspace_namespace(cwd: str) -> str:
    """The namespace of the workspace ``cwd`` is in (``workspace:<id>``)."""
    return "workspace:" + _fit(workspace_id(cwd))


@lru_cache(maxsize=256)
def workspace_id(cwd: str) -> str:
    if os.name != "nt" and _WINDOWS_PATH.match(cwd):  # recorded on Windows: no checkout here to read
        path = cwd.replace("\\", "/")
        return path[0].upper() + path[1:] if path[1:2] == ":" else path
    if not cwd.startswith(("/", "~")):  # relative: of no directory this process could tell
        return cwd
    try:
        start = Path(cwd).expanduser()
        root = repo_root(start)
        remote = _remote_url(root) if root is not None else ""
    except (OSError, ValueError, RuntimeError):  # a path the system refuses: too long, a NUL, ~nobody
        return cwd
    if root is None:
        return str(start)
    return normalise_remote(remote) if remote else str(root)


def normalise_remote(url: str) -> str:
    """``host/path`` of a git remote URL, without user, password, port noise or ``.git``."""
    url = url.strip()
    scp = _SCP_LIKE.match(url)
    if "://" in url:
        rest = url.split("://", 1)[1]
        host, _, path = rest.partition("/")
        host = host.rsplit("@", 1)[-1]
        if host.count(":") == 1 and host.split(":")[1].isdigit():
            host = host.split(":")[0]
    elif scp:
        host, path = scp.group(1), scp.group(2)
    else:
        return url.removesuffix("/").removesuffix(".git")
    path = path.strip("/").removesuffix(".git")
    return f"{host.lower()}/{path}" if path else host.lower()


def repo_root(start: Path) -> Path | None:
    """The root of the git repository (or worktree) holding ``start``; None outside any (or for a
    path the system cannot look at: a name too long, a directory not readable)."""
    for directory in (start, *start.parents):
        try:
            if (directory / ".git").exists():
                return directory
        except OSError:
            continue
    return None


def git_dirs(root: Path) -> tuple[Path, Path] | None:
    """The git directory of the checkout at ``root`` and the common one its config and shared refs
    are in (the same but for a worktree or submodule, whose ``.git`` is a file: "gitdir: <path>").
    None when ``.git`` is a file that names no directory."""
    git = root / ".git"
    if not git.is_file():
        return git, git
    text = git.read_text(encoding="utf-8", errors="replace").strip()
    if not text.startswith("gitdir:"):
        return None
    git = (root / text.split(":", 1)[1].strip()).resolve()
    common = git / "commondir"
    if common.is_file():
        return git, (git / common.read_text(encoding="utf-8").strip()).resolve()
    return git, git


def _remote_url(root: Path) -> str:
    try:
        dirs = git_dirs(root)
    except OSError:
        return ""
    if dirs is None:
        return ""
    parser = configparser.RawConfigParser(strict=False)
    try:
        parser.read(dirs[1] / "config", encoding="utf-8")
    except (configparser.Error, OSError):
        return ""
    remotes = [s for s in parser.sections() if s.startswith('remote "')]
    remotes.sort(key=lambda s: s != 'remote "origin"')
    for section in remotes:
        url = parser.get(section, "url", fallback="")
        if url:
            return url
    return ""


def _fit(text: str) -> str:
    text = re.sub(r"[\s\x00-\x1f\x7f-\x9f]+", "-", text.strip()) or "unknown"
    if len(text) <= MAX_ID_CHARS:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    return f"{text[: MAX_ID_CHARS - 13]}~{digest}"
