"""What opening a ClickHouse server takes beyond its DSN: the password and TLS settings, the
server's version against the minimum mnemo runs on, the database created when asked, and the
migrations' statements made for a replicated cluster.

A server older than :data:`MIN_VERSION` is refused by name. clickhouse-connect's own handshake
fails on very old servers before their version can be read through it (ClickHouse 18.16: "Unknown
identifier: readonly"), so when the handshake fails the version is asked over plain HTTP to say
why.
"""

from __future__ import annotations

import base64
import re
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import clickhouse_connect
from clickhouse_connect.driver.exceptions import ClickHouseError

from mnemo.config import Settings
from mnemo.config_sources import redact_dsn
from mnemo.errors import ConfigError, StoreError
from mnemo.store.connection import explained

# The oldest ClickHouse mnemo opens: an LTS release with everything its schema and queries use
# (DateTime64, named tuples, now64, MATERIALIZE COLUMN, tuple comparisons). Newer is better tested:
# mnemo's own tests run on chDB 26.9.
MIN_VERSION = (23, 8)
_PROBE_TIMEOUT_S = 5.0
# Sent with every query when replicas may lag (the store_read_your_writes setting). quorum: an
# insert returns once a majority of replicas hold it, in order, and a read sees every such insert
# (a Replicated* cluster). sequential: reads only (ClickHouse Cloud's SharedMergeTree, where
# insert quorums do not apply).
_CONSISTENCY: dict[str, dict[str, Any]] = {
    "off": {},
    "quorum": {"insert_quorum": "auto", "insert_quorum_parallel": 0, "select_sequential_consistency": 1},
    "sequential": {"select_sequential_consistency": 1},
}


@dataclass(frozen=True, slots=True)
class ServerOptions:
    """Connection options for a server, from the settings (never shown: the password)."""

    password: str = ""
    ca_file: str = ""
    verify: bool = True
    client_cert: str = ""
    client_key: str = ""
    cluster: str = ""  # a replicated cluster: tables Replicated*, schema changes ON CLUSTER
    read_your_writes: str = "off"  # off | quorum | sequential: see _CONSISTENCY

    @classmethod
    def from_settings(cls, settings: Settings) -> ServerOptions:
        password = settings.store_password.get_secret_value()
        if not password and settings.store_password_file:
            path = Path(settings.store_password_file).expanduser()
            try:
                password = path.read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise ConfigError(f"store_password_file {path}: cannot read it: {exc.strerror}") from None
        files = {}
        for name in ("store_ca_file", "store_client_cert", "store_client_key"):
            value = getattr(settings, name)
            files[name] = str(Path(value).expanduser()) if value else ""
            if value and not Path(files[name]).is_file():
                raise ConfigError(f"{name} {value}: no such file")
        ca, cert, key = files.values()
        return cls(
            password,
            ca,
            settings.store_verify,
            cert,
            key,
            settings.store_cluster,
            settings.store_read_your_writes,
        )

    def client_arguments(self) -> dict[str, Any]:
        """Keyword arguments for clickhouse_connect.get_client, beside the DSN."""
        out: dict[str, Any] = {}
        if self.password:
            out["password"] = self.password
        if self.ca_file:
            out["ca_cert"] = self.ca_file
        if not self.verify:
            out["verify"] = False
        if self.client_cert:
            out["client_cert"] = self.client_cert
            if self.client_key:
                out["client_cert_key"] = self.client_key
        if _CONSISTENCY[self.read_your_writes]:
            out["settings"] = dict(_CONSISTENCY[self.read_your_writes])
        return out


def parse_version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


def check_version(version: str, dsn: str) -> None:
    """Refuse a server older than MIN_VERSION, naming both."""
    found = parse_version(version)
    if found and found[:2] < MIN_VERSION:
        needed = ".".join(map(str, MIN_VERSION))
        raise StoreError(
            f"the ClickHouse server at {redact_dsn(dsn)} is version {version}, too old for mnemo: "
            f"it needs ClickHouse {needed} or newer"
        )


def probe_version(dsn: str, options: ServerOptions) -> str | None:
    """The server's version asked over plain HTTP (``SELECT version()``), or None if it does not
    answer: for saying why clickhouse-connect's handshake failed."""
    parts = urlsplit(dsn)
    port = parts.port or (8443 if parts.scheme == "https" else 8123)
    url = f"{parts.scheme}://{parts.hostname}:{port}/?query={quote('SELECT version()')}"
    request = urllib.request.Request(url)
    user, password = parts.username or "default", options.password or parts.password or ""
    request.add_header("Authorization", "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode())
    context = None
    if parts.scheme == "https":
        context = ssl.create_default_context(cafile=options.ca_file or None)
        if not options.verify:
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    try:
        with urllib.request.urlopen(request, timeout=_PROBE_TIMEOUT_S, context=context) as answer:
            return str(answer.read(200).decode("utf-8", "replace").strip()) or None
    except (OSError, urllib.error.URLError, ValueError):
        return None


def connect(dsn: str, options: ServerOptions, *, without_database: bool = False) -> Any:
    """A clickhouse-connect client for the server at ``dsn`` (to its default database if
    ``without_database``), the server's version checked: one too old is refused by name, also when
    the client's own handshake fails on it. Other failures raise ClickHouseError."""
    parts = urlsplit(dsn)
    target = parts._replace(path="", query="").geturl() if without_database else dsn
    try:
        client = clickhouse_connect.get_client(dsn=target, **options.client_arguments())
    except ClickHouseError:
        version = probe_version(dsn, options)
        if version is not None:
            check_version(version, dsn)
        raise
    try:
        check_version(client.server_version or "", dsn)
    except StoreError:
        client.close()
        raise
    return client


def create_database(dsn: str, options: ServerOptions) -> str:
    """Create the DSN's database if it does not exist (``mnemo server init``); its name."""
    database = urlsplit(dsn).path.strip("/") or "default"
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", database):
        raise ConfigError(f"store: {database!r} is not a database name mnemo creates (letters, digits, _)")
    try:
        client = connect(dsn, options, without_database=True)
    except ClickHouseError as exc:
        raise StoreError(f"cannot reach the server {redact_dsn(dsn)}: {explained(exc)}") from None
    try:
        cluster = f" ON CLUSTER `{options.cluster}`" if options.cluster else ""
        client.command(f"CREATE DATABASE IF NOT EXISTS `{database}`{cluster}")
    except ClickHouseError as exc:
        raise StoreError(f"cannot create the database {database}: {explained(exc)}") from None
    finally:
        client.close()
    return database


_DDL_TARGET = re.compile(
    r"^(\s*(?:CREATE TABLE IF NOT EXISTS|CREATE MATERIALIZED VIEW IF NOT EXISTS|ALTER TABLE"
    r"|DROP VIEW IF EXISTS) [A-Za-z_][A-Za-z0-9_]*)"
)
_ENGINE = re.compile(r"ENGINE = (Replacing)?MergeTree\b")


def for_cluster(statement: str, cluster: str) -> str:
    """A migration's statement for a replicated cluster (the ``store_cluster`` setting): run
    ``ON CLUSTER`` on every node, each table a Replicated* engine at the server's default replica
    path. Unchanged when ``cluster`` is empty (one server, ClickHouse Cloud, embedded chDB)."""
    if not cluster:
        return statement
    statement = _DDL_TARGET.sub(lambda m: f"{m.group(1)} ON CLUSTER `{cluster}`", statement, count=1)
    return _ENGINE.sub(lambda m: f"ENGINE = Replicated{m.group(1) or ''}MergeTree", statement)
