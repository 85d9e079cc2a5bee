"""The version refusal against a real old ClickHouse: Debian's clickhouse-server 18.16.

No modern ClickHouse server installs on the machines mnemo is built on, but Debian's 18.16 does,
and it is the one a user of such a machine would point mnemo at. The test starts the real binary
on free ports in a temporary directory and checks that the daemon and ``mnemo server init``
refuse it by its version, not with a stack trace. Set MNEMO_TEST_CLICKHOUSE_SERVER to a binary
(default: clickhouse-server on PATH or /usr/sbin); CI installs it and requires it
(MNEMO_TEST_REQUIRE_HOSTS=1).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import Home, wait_until

BINARY = (
    os.environ.get("MNEMO_TEST_CLICKHOUSE_SERVER")
    or shutil.which("clickhouse-server")
    or "/usr/sbin/clickhouse-server"
)
HAS_BINARY = os.path.exists(BINARY)
if not HAS_BINARY and os.environ.get("MNEMO_TEST_REQUIRE_HOSTS") == "1":
    raise RuntimeError(
        f"clickhouse-server is required here and missing: {BINARY} (apt-get install clickhouse-server)"
    )
pytestmark = pytest.mark.skipif(not HAS_BINARY, reason=f"no clickhouse-server at {BINARY}")

_CONFIG = """<yandex>
  <logger><level>warning</level><log>{dir}/server.log</log><errorlog>{dir}/error.log</errorlog></logger>
  <http_port>{http}</http_port>
  <tcp_port>{tcp}</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>{dir}/data/</path>
  <tmp_path>{dir}/tmp/</tmp_path>
  <users_config>{dir}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>268435456</mark_cache_size>
</yandex>
"""
_USERS = """<yandex>
  <profiles><default/></profiles>
  <quotas><default/></quotas>
  <users><default><password/><networks><ip>127.0.0.1</ip></networks>
    <profile>default</profile><quota>default</quota></default></users>
</yandex>
"""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/?query=SELECT%201", timeout=2) as answer:
            return bool(answer.read().strip() == b"1")
    except OSError:
        return False


@pytest.fixture
def old_server(tmp_path: Path) -> Iterator[str]:
    http, tcp = _free_port(), _free_port()
    (tmp_path / "config.xml").write_text(_CONFIG.format(dir=tmp_path, http=http, tcp=tcp))
    (tmp_path / "users.xml").write_text(_USERS)
    with (tmp_path / "stdout.log").open("wb") as out:
        process = subprocess.Popen(
            [BINARY, f"--config-file={tmp_path / 'config.xml'}"], stdout=out, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{http}"
    try:
        wait_until(
            lambda: process.poll() is not None or _answers(url), timeout_s=60, what="clickhouse-server"
        )
        assert process.poll() is None, (tmp_path / "stdout.log").read_text()[-2000:]
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_debians_clickhouse_18_16_is_refused_by_its_version(home: Home, old_server: str) -> None:
    with urllib.request.urlopen(f"{old_server}/?query=SELECT%20version()", timeout=5) as answer:
        version = answer.read().decode().strip()
    assert version.startswith("18.")  # the real old binary, not a newer one installed instead
    old = home.with_env(MNEMO_STORE=f"{old_server}/mnemo", MNEMO_EMBEDDER="none")
    for args in (("status",), ("server", "init")):
        refused = old.mnemo(*args, check=False)
        assert refused.returncode != 0
        assert f"is version {version}, too old for mnemo: it needs ClickHouse 23.8 or newer" in refused.stderr
        assert "Traceback" not in refused.stderr
