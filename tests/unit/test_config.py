"""Settings: file plus environment, environment wins, errors name the key and its source."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from mnemo.config import SETTABLE, load_settings
from mnemo.config_sources import redact_dsn
from mnemo.errors import ConfigError
from tests.helpers import REPO


def _env(home: Path, **extra: str) -> dict[str, str]:
    return {"MNEMO_HOME": str(home), "USER": "ana", **extra}


def test_mnemo_home_puts_everything_under_one_directory(tmp_path: Path) -> None:
    settings = load_settings(_env(tmp_path))
    assert settings.store == f"chdb://{tmp_path}/store"
    assert settings.config_file == tmp_path / "config.toml"
    assert settings.socket_path.parent == tmp_path / "run"
    assert settings.log_path.parent == tmp_path / "logs"
    assert settings.person == "ana" and settings.namespace_of_person == "person:ana"


def test_environment_wins_over_the_config_file(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('daemon_idle_s = 60\nperson = "bea"\nmax_episode_chars = 1000\n')
    settings = load_settings(_env(tmp_path, MNEMO_DAEMON_IDLE_S="5"))
    assert settings.daemon_idle_s == 5.0
    assert settings.person == "bea"
    assert settings.max_episode_chars == 1000


def test_unknown_key_in_the_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("idle_seconds = 3\n")
    with pytest.raises(ConfigError, match="unknown setting\\(s\\) idle_seconds in .*config.toml"):
        load_settings(_env(tmp_path))


def test_invalid_value_names_the_key_and_where_it_came_from(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match="daemon_idle_s \\(from environment variable MNEMO_DAEMON_IDLE_S\\)"
    ):
        load_settings(_env(tmp_path, MNEMO_DAEMON_IDLE_S="soon"))
    (tmp_path / "config.toml").write_text("max_episode_chars = -1\n")
    with pytest.raises(ConfigError, match="max_episode_chars \\(from .*config.toml\\)"):
        load_settings(_env(tmp_path))


def test_a_context_too_small_for_the_writers_prompt_is_refused_with_its_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="llm_context_tokens.* greater than or equal to 2048"):
        load_settings(_env(tmp_path, MNEMO_LLM_CONTEXT_TOKENS="1024"))
    assert load_settings(_env(tmp_path, MNEMO_LLM_CONTEXT_TOKENS="2048")).llm_context_tokens == 2048


def test_a_person_names_a_namespace_a_login_name_is_made_into_one_an_explicit_one_is_checked(
    tmp_path: Path,
) -> None:
    assert load_settings(_env(tmp_path, USER="Ana Lopez\t")).namespace_of_person == "person:Ana-Lopez"
    for person in ("Ana Lopez", "ana\x00"):
        with pytest.raises(ConfigError, match="person \\(from environment variable MNEMO_PERSON\\)"):
            load_settings(_env(tmp_path, MNEMO_PERSON=person))


def test_malformed_toml_is_reported(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("store = \n")
    with pytest.raises(ConfigError, match="is not valid TOML"):
        load_settings(_env(tmp_path))


@pytest.mark.parametrize(
    ("dsn", "message"),
    [
        ("chdb://relative/path", "absolute path"),
        ("postgres://db", "unsupported DSN"),
        ("", None),
    ],
)
def test_store_dsn_is_checked(tmp_path: Path, dsn: str, message: str | None) -> None:
    if message is None:
        assert load_settings(_env(tmp_path, MNEMO_STORE=dsn)).store.startswith("chdb:///")
        return
    with pytest.raises(ConfigError, match=message):
        load_settings(_env(tmp_path, MNEMO_STORE=dsn))


def test_server_dsn_is_accepted_and_its_password_never_shown(tmp_path: Path) -> None:
    settings = load_settings(_env(tmp_path, MNEMO_STORE="https://mnemo:s3cret@ch.example:8443/mnemo"))
    assert settings.store_dsn_for_display == "https://mnemo:***@ch.example:8443/mnemo"
    assert "s3cret" not in settings.store_dsn_for_display
    assert redact_dsn("chdb:///x") == "chdb:///x"


def test_too_long_home_for_a_unix_socket_is_a_clear_error(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 120)
    with pytest.raises(ConfigError, match="longer than unix sockets allow"):
        load_settings(_env(deep))


def test_settings_round_trip_through_the_environment_given_to_the_daemon(tmp_path: Path) -> None:
    settings = load_settings(
        _env(
            tmp_path,
            MNEMO_DAEMON_IDLE_S="7",
            MNEMO_PERSON="cho",
            MNEMO_LLM_API_KEY="sk-abc",
            MNEMO_CALIBRATION='{"relation": {"temperature": 1.5, "bias": {"same": -0.25}}}',
        )
    )
    again = load_settings(settings.as_environment(), is_spawned=True)  # as the daemon reads it
    assert again == settings
    assert again.llm_api_key.get_secret_value() == "sk-abc"
    assert again.calibration["relation"].bias == {"same": -0.25}


def test_the_example_config_file_is_valid(tmp_path: Path) -> None:
    example = REPO / "configs" / "mnemo.toml"
    (tmp_path / "config.toml").write_text(example.read_text())
    settings = load_settings(_env(tmp_path))
    assert settings.llm_daily_token_cap == 2_000_000 and settings.embedder == "auto"


def test_every_setting_is_documented() -> None:
    docs = (REPO / "docs" / "settings.md").read_text()
    for key in SETTABLE:
        assert f"## `{key}`" in docs, f"docs/settings.md has no section for {key}"
        assert f"MNEMO_{key.upper()}" in docs
    documented = set(re.findall(r"^## `(\w+)`", docs, flags=re.MULTILINE))
    assert documented == {*SETTABLE, "MNEMO_HOME"}, (
        "docs/settings.md has a section for a setting that does not exist"
    )


def test_the_hook_process_finds_the_same_directories_as_platformdirs(tmp_path: Path) -> None:
    import platformdirs

    from mnemo.paths import layout

    for env in ({}, {"XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}):
        full = {**{k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "MNEMO_"))}, **env}
        with pytest.MonkeyPatch.context() as patch:
            for key in ("XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
                patch.delenv(key, raising=False)
            for key, value in env.items():
                patch.setenv(key, value)
            where = layout(full)
            assert Path(where.run_dir) == Path(platformdirs.user_state_dir("mnemo")) / "run"
            assert Path(where.config_file) == Path(platformdirs.user_config_dir("mnemo")) / "config.toml"
            assert Path(where.data_dir) == Path(platformdirs.user_data_dir("mnemo")) / "store"
            assert load_settings(full).socket_path == Path(where.socket_path)
