"""What a memory's text names as code, and how a flag reads (no git here: see
tests/daemon/test_code_anchors.py for the repository)."""

from __future__ import annotations

from pathlib import Path

from mnemo.code.anchors import named_paths
from mnemo.code.check import CodeFlag
from mnemo.numerals import as_digits
from mnemo.workspace import repo_root


def test_paths_are_found_in_prose_and_tool_calls_but_not_versions_urls_or_addresses() -> None:
    texts = [
        "The gateway timeout is 600 s via timeout_sec in lb.tf (see infra/modules/alb).",
        'Read {"file_path": "/srv/shop/server/app.py"}',
        "Python 3.11, https://example.com/docs/page.html, ana@example.com and v2.4.1 are not files.",
        "Edit src/main.rs, then src/main.rs again.",
    ]
    assert named_paths(texts) == [
        "lb.tf",
        "infra/modules/alb",
        "/srv/shop/server/app.py",
        "src/main.rs",
    ]


def test_a_flag_says_what_changed_and_what_the_file_no_longer_holds() -> None:
    since = "f2cec2d0fe4afad01db28451f60d3bf63def7f16"
    changed = CodeFlag("changed", "infra/lb.tf", since, commits=("dbec04f",), missing=("600",))
    assert changed.note() == "infra/lb.tf changed in dbec04f since; 600 no longer in it"
    assert CodeFlag("changed", "a.py", since).note() == "a.py changed since f2cec2d"
    assert CodeFlag("deleted", "a.py", since).note() == "a.py was deleted since f2cec2d"
    moved = CodeFlag("moved", "a.py", since, new_path="b.py")
    assert moved.note() == "a.py moved to b.py" and not moved.stale
    both = CodeFlag("moved and changed", "a.py", since, new_path="b.py", commits=("1234567",))
    assert both.note() == "a.py (now b.py) changed in 1234567 since" and both.stale


def test_the_repository_of_a_path_the_system_cannot_look_at_is_none_not_an_error(tmp_path: Path) -> None:
    # A hook's cwd is the host's word: a name past the system's limit makes stat fail (ENAMETOOLONG).
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    assert repo_root(tmp_path / "repo" / "src") == tmp_path / "repo"
    assert repo_root(tmp_path / "repo" / ("x" * 5_000)) == tmp_path / "repo"
    assert repo_root(Path("/srv") / ("x" * 5_000)) is None


def test_numbers_written_as_words_are_read_as_digits_in_english_and_spanish() -> None:
    assert as_digits("retries up to three times, cada dos semanas, once a day, one job") == (
        "retries up to 3 times, cada 2 semanas, once a day, one job"
    )
