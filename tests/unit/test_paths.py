"""The settings' inputs digest (mnemo.paths): what lets the command trust a running daemon
without loading the settings, so it must change with anything the settings are resolved from."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemo.config import load_settings
from mnemo.paths import INPUTS_ENV, index_hash_seed, inputs_digest


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"MNEMO_HOME": str(tmp_path), "HOME": "/home/ana", "USER": "ana"}


def test_the_digest_changes_with_every_input_of_the_settings(env: dict[str, str], tmp_path: Path) -> None:
    base = inputs_digest(env)
    assert inputs_digest(dict(env)) == base
    for changed in (
        {**env, "MNEMO_STORE": "chdb:///elsewhere"},
        {**env, "USER": "bob"},
        {**env, "XDG_DATA_HOME": "/data"},
        {**env, "MNEMO_HOME": str(tmp_path / "other")},
    ):
        assert inputs_digest(changed) != base, changed
    assert inputs_digest({**env, "PATH": "/usr/bin", "TERM": "xterm"}) == base  # not an input
    (tmp_path / "config.toml").write_text('store = "chdb:///from/the/file"\n', encoding="utf-8")
    with_file = inputs_digest(env)
    assert with_file != base
    (tmp_path / "config.toml").write_text('store = "chdb:///from/another"\n', encoding="utf-8")
    assert inputs_digest(env) not in (base, with_file)


def test_a_digest_handed_down_by_a_spawner_never_stands_for_another_process(env: dict[str, str]) -> None:
    # A stale MNEMO_SPAWNED_FROM in a client's environment must not make its own settings look
    # like the daemon's: the client computes its digest from what it has.
    daemons = inputs_digest(env)
    elsewhere = {**env, "MNEMO_STORE": "chdb:///elsewhere", INPUTS_ENV: daemons}
    assert inputs_digest(elsewhere) != daemons
    assert load_settings(elsewhere).inputs_digest != daemons
    # Only a process the spawner started takes the digest it was given.
    assert load_settings(elsewhere, is_spawned=True).inputs_digest == daemons


def test_the_settings_carry_the_digest_of_the_very_file_they_read(
    env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "config.toml").write_text("request_timeout_s = 17.5\n", encoding="utf-8")
    settings = load_settings(env)
    assert settings.request_timeout_s == 17.5
    assert settings.inputs_digest == inputs_digest(env)
    assert settings.as_environment()[INPUTS_ENV] == settings.inputs_digest


def test_a_config_path_that_cannot_be_read_is_not_taken_for_no_file(
    env: dict[str, str], tmp_path: Path
) -> None:
    no_file = inputs_digest(env)
    (tmp_path / "config.toml").mkdir()  # a directory where the file should be: the settings refuse it
    assert inputs_digest(env) != no_file


def test_the_hook_process_knows_the_same_hosts_as_the_rest_of_mnemo() -> None:
    # The hook process keeps its own copy (it does not import enum); the two must not drift.
    from mnemo.hook_process import CLIENTS
    from mnemo.vocabulary import TRANSCRIPT_HOSTS

    assert CLIENTS == TRANSCRIPT_HOSTS


def test_the_hook_process_knows_the_writers_own_calls_by_the_marker_the_writer_sets() -> None:
    from mnemo.distill.hostcli import WRITER_CALL_ENV
    from mnemo.hook_process import WRITER_CALL_ENV as SEEN

    assert SEEN == WRITER_CALL_ENV


def test_the_daemons_string_hash_salt_is_drawn_once_private_and_kept(tmp_path: Path) -> None:
    index_dir = tmp_path / "index"
    seed = index_hash_seed(str(index_dir))
    assert seed.isdigit() and 0 < int(seed) < 1 << 32  # what PYTHONHASHSEED takes
    assert index_hash_seed(str(index_dir)) == seed
    kept = index_dir / "hash-seed"
    assert kept.stat().st_mode & 0o777 == 0o600
    kept.write_text("not a number")  # a damaged file: a new salt (the next start builds anew)
    again = index_hash_seed(str(index_dir))
    assert again.isdigit() and index_hash_seed(str(index_dir)) == again
