"""Docs match the code: every CLI command and MCP tool has its section (settings: test_config)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import anyio

from mnemo import hook_process
from mnemo.cli import GROUPS
from mnemo.cli.parser import build_parser
from mnemo.config import Settings, load_settings
from mnemo.hosts import hookspec
from mnemo.mcpserver.tools import build_server
from tests.helpers import REPO

DOCS = REPO / "docs"


def test_every_cli_command_has_a_section() -> None:
    text = (DOCS / "cli.md").read_text()
    for command in GROUPS:
        assert f"## `mnemo {command}`" in text, command


def test_every_mcp_tool_has_a_section(tmp_path: Path) -> None:
    text = (DOCS / "tools.md").read_text()
    server = build_server(load_settings({"MNEMO_HOME": str(tmp_path)}))
    names = [tool.name for tool in anyio.run(server.list_tools)]
    assert len(names) == 5
    for name in names:
        assert f"## `{name}`" in text, name


def test_ci_runs_the_readme_test_command() -> None:
    root = REPO
    ci_command = (root / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert ci_command == "pip install uv && uv run --frozen pytest"
    assert f"```bash\n{ci_command}\n```" in (root / "README.md").read_text()


def test_tool_descriptions_are_dedented_for_the_model(tmp_path: Path) -> None:
    server = build_server(load_settings({"MNEMO_HOME": str(tmp_path)}))
    for tool in anyio.run(server.list_tools):
        assert tool.description and "\n    " not in tool.description, tool.name


def test_the_plugins_hooks_the_configs_and_mnemo_setup_are_one_table() -> None:
    plugin = json.loads((REPO / "hooks" / "hooks.json").read_text())["hooks"]
    assert plugin == hookspec.hooks()  # the plugin tells the client from the hook's input
    for name, client in (("claude-code.settings.json", "claude-code"), ("codex.hooks.json", "codex")):
        assert json.loads((REPO / "configs" / name).read_text()) == {
            "hooks": hookspec.hooks(client=client)
        }, name
    assert {event for event, _, _ in hookspec.EVENTS} == set(hook_process.EVENTS)
    for event, timeout_s, _ in hookspec.EVENTS:  # the host waits longer than the daemon may take
        assert timeout_s > hook_process.DEADLINES_S.get(event, 1.0), event


def test_the_team_compose_file_uses_only_real_settings_and_commands() -> None:
    # configs/docker-compose.yml is not run here (no Docker): at least every setting it sets and
    # every mnemo command it runs must be mnemo's.
    text = (REPO / "configs" / "docker-compose.yml").read_text()
    fields = set(Settings.model_fields)
    named = set(re.findall(r"^\s+MNEMO_([A-Z_]+):", text, flags=re.M)) - {"HOME", "WRITER_PASSWORD"}
    assert named and {n.lower() for n in named} <= fields, named
    parser = build_parser(list(GROUPS))
    commands = re.findall(r"\bmnemo ((?:server|daemon) [a-z]+(?: --[a-z-]+(?: [a-z]+)?)*)", text)
    assert "daemon run" in commands and "server setup --apply --writer writer" in commands
    for command in commands:
        words = [w for w in command.split() if not w.startswith("$")]
        parser.parse_args(words)  # exits (SystemExit) on a command mnemo does not have


def test_the_help_of_distill_names_both_kinds_of_writer() -> None:
    text = " ".join(build_parser(list(GROUPS)).format_help().split())
    assert "distill distil a session now (needs a writer: llm_url, or a host's CLI" in text, text


def _anchors(page: Path) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces to hyphens,
    a repeated heading numbered."""
    seen: dict[str, int] = {}
    text = re.sub(r"(?ms)^```.*?^```", "", page.read_text())
    for heading in re.findall(r"(?m)^#{1,6} (.+)$", text):
        anchor = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        seen[anchor] = seen.get(anchor, -1) + 1
    return {a if i == 0 else f"{a}-{i}" for a, n in seen.items() for i in range(n + 1)}


def test_every_link_between_the_docs_reaches_its_file_and_heading() -> None:
    """The docs link to each other's sections (benchmarks.md is an index of pages): a moved page or a
    renamed heading must not leave a link going nowhere."""
    pages = [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]
    checked = 0
    for page in pages:
        text = re.sub(r"(?ms)^```.*?^```", "", page.read_text())
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            assert linked.exists(), f"{page.relative_to(REPO)}: {target}"
            if anchor and linked.suffix == ".md":
                assert anchor in _anchors(linked), f"{page.relative_to(REPO)}: {target}"
                checked += 1
    assert checked > 100, checked  # the docs do link to sections
