"""A change to one of a host's files: what it holds now, what it will hold, shown as a diff and
written whole.

Nothing is written until every file of a setup has been read and its new text made, so a file
that cannot be read (invalid JSON or TOML) stops the setup with nothing changed. A file is
replaced atomically (a temporary file beside it, then a rename), keeping its permissions, and the
first time mnemo changes it, a copy of it as it was is kept beside it (``<name>.before-mnemo``).
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnemo.errors import ConfigError

BACKUP_SUFFIX = ".before-mnemo"


@dataclass(frozen=True, slots=True)
class FileChange:
    path: Path
    before: str | None  # None: the file does not exist
    after: str

    @property
    def changes(self) -> bool:
        return self.after != (self.before or "")

    def diff(self) -> str:
        """The changed lines only: the files hold more than mnemo's entries (a login, say), and
        none of that is printed."""
        lines = difflib.unified_diff(
            (self.before or "").splitlines(keepends=True),
            self.after.splitlines(keepends=True),
            fromfile=str(self.path) if self.before is not None else "/dev/null",
            tofile=str(self.path),
            n=0,
        )
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)

    def write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        backup = self.path.with_name(self.path.name + BACKUP_SUFFIX)
        if self.before is not None and not backup.exists():
            shutil.copy2(self.path, backup)
        mode = self.path.stat().st_mode & 0o777 if self.path.exists() else 0o600
        handle, name = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(self.after)
                out.flush()
                os.fsync(out.fileno())
            os.chmod(name, mode)
            os.replace(name, self.path)
        except BaseException:
            Path(name).unlink(missing_ok=True)
            raise


def read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}; nothing was changed") from exc


def parse_json(path: Path, text: str | None) -> dict[str, Any]:
    """A host's JSON settings file as a dict ({} when absent or empty)."""
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            "fix it and run this again: nothing was changed"
        ) from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path} holds a JSON {type(data).__name__}, not an object; nothing was changed")
    return data


def json_text(data: dict[str, Any]) -> str:
    """As the hosts write their own files: two-space indents, non-ASCII kept."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def json_change(path: Path, text: str | None, data: dict[str, Any]) -> FileChange:
    """The change that writes ``data``; none when it holds what the file already holds (or
    the file is absent and there is nothing to write)."""
    if text is None and not data:
        return FileChange(path, None, "")
    unchanged = text is not None and text.strip() and parse_json(path, text) == data
    return FileChange(path, text, text if unchanged and text is not None else json_text(data))


def with_key(data: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """``data`` with ``key`` set: in its place when it is there, else first — so that the diff
    adds lines and changes none of the user's (the last key would gain a comma)."""
    return {**data, key: value} if key in data else {key: value, **data}
