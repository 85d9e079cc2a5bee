"""A server's connection options from the settings: the password from the environment or a file,
TLS files that must exist, and what reaches clickhouse-connect."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemo.config import load_settings
from mnemo.errors import ConfigError, StoreError
from mnemo.store.server import ServerOptions, check_version, parse_version


def _options(tmp_path: Path, **env: str) -> ServerOptions:
    base = {"MNEMO_HOME": str(tmp_path / "home"), "MNEMO_STORE": "https://ana@db.example:8443/mnemo"}
    return ServerOptions.from_settings(load_settings({**base, **env}))


def test_the_password_from_the_environment_wins_over_a_file(tmp_path: Path) -> None:
    secret = tmp_path / "pw"
    secret.write_text("from-the-file\n")
    assert _options(tmp_path, MNEMO_STORE_PASSWORD_FILE=str(secret)).password == "from-the-file"
    both = _options(tmp_path, MNEMO_STORE_PASSWORD="from-env", MNEMO_STORE_PASSWORD_FILE=str(secret))
    assert both.password == "from-env" and both.client_arguments()["password"] == "from-env"


def test_tls_files_must_exist_and_reach_the_client(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="store_ca_file .*: no such file"):
        _options(tmp_path, MNEMO_STORE_CA_FILE=str(tmp_path / "missing.pem"))
    with pytest.raises(ConfigError, match="store_password_file .*: cannot read it"):
        _options(tmp_path, MNEMO_STORE_PASSWORD_FILE=str(tmp_path / "missing"))
    ca, cert = tmp_path / "ca.pem", tmp_path / "me.pem"
    ca.write_text("x")
    cert.write_text("x")
    options = _options(
        tmp_path, MNEMO_STORE_CA_FILE=str(ca), MNEMO_STORE_CLIENT_CERT=str(cert), MNEMO_STORE_VERIFY="false"
    )
    assert options.client_arguments() == {"ca_cert": str(ca), "client_cert": str(cert), "verify": False}
    assert _options(tmp_path).client_arguments() == {}


@pytest.mark.parametrize(
    ("version", "refused"), [("18.16.1", True), ("23.3.8.21", True), ("23.8.1", False), ("26.9.2.1", False)]
)
def test_the_minimum_version_is_23_8(version: str, refused: bool) -> None:
    assert parse_version(version)[:2] == tuple(int(p) for p in version.split(".")[:2])
    if refused:
        with pytest.raises(StoreError, match=f"is version {version}, too old"):
            check_version(version, "http://h:8123/db")
    else:
        check_version(version, "http://h:8123/db")
