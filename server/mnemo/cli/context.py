"""What every command gets: the daemon's client and the settings, each made on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlencode

from mnemo.client.plain import PlainClient

if TYPE_CHECKING:
    from mnemo.config import Settings

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_NOT_RUNNING = 0, 1, 2, 3


class Context:
    def __init__(self) -> None:
        self._client: PlainClient | None = None

    @property
    def client(self) -> PlainClient:
        if self._client is None:
            self._client = PlainClient()
        return self._client

    def settings(self) -> Settings:
        """The full settings (pydantic, the config file): for commands that need more than the daemon."""
        return self.client.settings()

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


def given(**values: object) -> dict[str, object]:
    """A request's fields, those not given (None) left to the daemon's defaults."""
    return {key: value for key, value in values.items() if value is not None}


def query_string(**values: object) -> str:
    """``?name=value&…`` of the values given, or "" when none is."""
    present = given(**values)
    return f"?{urlencode(present)}" if present else ""
