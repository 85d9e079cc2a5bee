"""The stdio MCP server, driven by the real MCP client over stdio."""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import CallToolResult

from mnemo.client.typed import DaemonClient
from mnemo.episodes import EpisodeIn
from mnemo.mcpserver.tools import RESULT_META
from tests.helpers import BIN, Home, event_input, hook, store_held_by_another_process, wait_for_vectors

pytestmark = pytest.mark.anyio
TOOLS = {"recall", "remember", "forget", "keep", "recall_episode"}


@asynccontextmanager
async def mcp_client(home: Home) -> AsyncIterator[Client]:
    params = StdioServerParameters(command=str(BIN / "mnemo-mcp"), env=home.env)
    async with Client(params, read_timeout_seconds=120) as client:
        yield client


def structured(result: CallToolResult) -> Any:
    """The full result, which client programs find in the answer's _meta."""
    assert not result.is_error, result.content
    assert result.meta is not None and result.structured_content is None
    return result.meta[RESULT_META]


def said(result: CallToolResult) -> str:
    """The text content: what the model reads."""
    assert not result.is_error, result.content
    return "\n".join(getattr(block, "text", "") for block in result.content)


def error_text(result: CallToolResult) -> str:
    assert result.is_error
    return " ".join(getattr(block, "text", "") for block in result.content)


async def test_five_tools_are_listed_with_annotations_and_no_output_schema(home: Home) -> None:
    async with mcp_client(home) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    for name in ("recall", "recall_episode"):
        assert tools[name].annotations is not None and tools[name].annotations.read_only_hint is True
    assert tools["forget"].annotations is not None and tools["forget"].annotations.destructive_hint is True
    for name in ("remember", "keep", "forget"):
        assert tools[name].annotations is not None and tools[name].annotations.read_only_hint is False
    for tool in tools.values():
        # The answer is text for the model: hosts read structured output instead of it.
        assert tool.output_schema is None, tool.name
        assert tool.description, tool.name
    recall_inputs = tools["recall"].input_schema["properties"]
    assert recall_inputs["limit"]["maximum"] == 50 and recall_inputs["limit"]["minimum"] == 1
    assert recall_inputs["query"]["maxLength"] == 2000


async def test_remember_recall_forget_round_trip(home: Home) -> None:
    async with mcp_client(home) as client:
        stored = structured(
            await client.call_tool(
                "remember",
                {
                    "content": "The gateway timeout was raised to 600 s",
                    "type": "decision",
                    "why": "the load balancer cut streams at 120 s",
                    "who": "Ana",
                    "entities": [
                        {"name": "gateway", "role": "subject"},
                        {"name": "lb.tf", "role": "location"},
                    ],
                },
            )
        )
        memory_id = stored["id"]
        assert stored["status"] == "active" and stored["namespace"] == "person:tester"
        assert stored["sources"], "an explicit memory cites the note episode it was written from"

        answer = await client.call_tool("recall", {"query": "why is the gateway timeout 600 s?"})
        found = structured(answer)
        assert [hit["memory"]["id"] for hit in found["memories"]] == [memory_id]
        assert found["memories"][0]["memory"]["why"] == "the load balancer cut streams at 120 s"
        # The model reads one line per memory, with only what is set, not the structure as JSON.
        header, line = said(answer).splitlines()
        assert header == "1 memory, best first:"
        assert line == (
            f"[{memory_id}] decision (person): The gateway timeout was raised to 600 s "
            "Who: Ana. Why: the load balancer cut streams at 120 s."
        )

        sources = await client.call_tool("recall_episode", {"memory": memory_id})
        assert [hit["episode"]["id"] for hit in structured(sources)["episodes"]] == stored["sources"]
        assert said(sources).splitlines()[-1] == "  The gateway timeout was raised to 600 s"

        gone = await client.call_tool("forget", {"id": memory_id, "reason": "superseded"})
        forgotten = structured(gone)
        assert forgotten["status"] == "forgotten" and forgotten["status_reason"] == "superseded"
        assert said(gone).splitlines()[1].startswith(f"[{memory_id}] decision (person; forgotten")
        assert said(gone).endswith("Reason: superseded.")

        after = structured(await client.call_tool("recall", {"query": "why is the gateway timeout 600 s?"}))
        assert memory_id not in [hit["memory"]["id"] for hit in after["memories"]]
        with_history = structured(
            await client.call_tool("recall", {"query": "gateway timeout", "include_history": True})
        )
        assert memory_id not in [hit["memory"]["id"] for hit in with_history["memories"]]


async def test_an_appended_episode_comes_back_from_recall_episode(home: Home) -> None:
    async with mcp_client(home) as client:
        await client.list_tools()
        async with DaemonClient(home.settings) as daemon:
            [appended] = await daemon.append(
                [
                    EpisodeIn(
                        id="hook-s1-3",
                        text="We agreed the staging cluster is called Bluebird",
                        session="s1",
                        turn=3,
                        who="Ana",
                    )
                ]
            )
        assert appended.is_new

        by_id = structured(await client.call_tool("recall_episode", {"id": "hook-s1-3"}))
        assert [hit["episode"]["id"] for hit in by_id["episodes"]] == ["hook-s1-3"]
        assert by_id["episodes"][0]["episode"]["who"] == "Ana"

        by_session = structured(
            await client.call_tool("recall_episode", {"session": "s1", "from_turn": 2, "to_turn": 4})
        )
        assert [hit["episode"]["id"] for hit in by_session["episodes"]] == ["hook-s1-3"]

        by_query = structured(
            await client.call_tool("recall_episode", {"query": "what is the staging cluster called"})
        )
        assert by_query["episodes"][0]["episode"]["id"] == "hook-s1-3"

        # No memory answers this, so recall goes down to the episodes.
        recalled = structured(await client.call_tool("recall", {"query": "Bluebird"}))
        assert recalled["memories"] == []
        assert [hit["episode"]["id"] for hit in recalled["episodes"]] == ["hook-s1-3"]


async def test_bad_arguments_and_unknown_ids_are_tool_errors_naming_the_problem(home: Home) -> None:
    async with mcp_client(home) as client:
        assert "limit" in error_text(await client.call_tool("recall", {"query": "x", "limit": 0}))
        assert "type" in error_text(await client.call_tool("remember", {"content": "x", "type": "opinion"}))
        too_long = error_text(await client.call_tool("remember", {"content": "x" * 5000, "type": "fact"}))
        assert "content" in too_long
        unknown = error_text(await client.call_tool("forget", {"id": "mem_doesnotexist", "reason": "r"}))
        assert "no memory has the id 'mem_doesnotexist'" in unknown
        missing = error_text(await client.call_tool("recall_episode", {"id": "nope"}))
        assert "no episode has the id 'nope'" in missing
        neither = error_text(await client.call_tool("recall_episode", {}))
        assert "give an episode id, a memory id, a session, or a query" in neither
        no_memory = error_text(await client.call_tool("recall_episode", {"memory": "mem_doesnotexist"}))
        assert "no memory has the id 'mem_doesnotexist'" in no_memory
        both = error_text(await client.call_tool("recall_episode", {"id": "a", "memory": "b"}))
        assert "give one of: an episode id, a memory id, or a session and/or a query" in both
        keep = error_text(
            await client.call_tool("keep", {"scope": "user", "action": "remove", "old_text": "x"})
        )
        assert "no entry of the user set contains it" in keep
        token = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
        leak = error_text(
            await client.call_tool("keep", {"scope": "user", "action": "add", "content": token})
        )
        assert "github-token" in leak and token not in leak
        # The server still works after all of these.
        ok = structured(
            await client.call_tool("remember", {"content": "Tabs, not spaces, in Makefiles", "type": "fact"})
        )
        assert ok["id"].startswith("mem_")


async def test_cli_json_prints_the_same_structure_as_the_tools(home: Home) -> None:
    async with mcp_client(home) as client:
        structured(
            await client.call_tool(
                "remember", {"content": "Releases are cut on Thursday", "type": "decision"}
            )
        )
        async with DaemonClient(home.settings) as daemon:
            await daemon.append(
                [EpisodeIn(id="e-1", text="the release train leaves Thursday", session="s2", turn=1)]
            )
            await wait_for_vectors(daemon)  # both recalls below then see the same index
        tool_recall = structured(await client.call_tool("recall", {"query": "release Thursday", "limit": 5}))
        tool_episodes = structured(await client.call_tool("recall_episode", {"session": "s2"}))
    cli_recall = json.loads(home.mnemo("recall", "release Thursday", "--limit", "5", "--json").stdout)
    cli_episodes = json.loads(home.mnemo("recall-episode", "--session", "s2", "--json").stdout)
    assert cli_recall == tool_recall
    assert cli_episodes == tool_episodes
    assert cli_episodes["episodes"][0]["episode"]["id"] == "e-1"


def test_stdout_carries_only_json_rpc(home: Home) -> None:
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "recall", "arguments": {"query": "anything"}},
        },
    ]
    lines = []
    with subprocess.Popen(
        [str(BIN / "mnemo-mcp")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=home.env,
        text=True,
    ) as process:
        assert process.stdin is not None and process.stdout is not None
        for message in messages:
            process.stdin.write(json.dumps(message) + "\n")
            process.stdin.flush()
            if "id" in message:
                lines.append(process.stdout.readline())
        process.stdin.close()
        lines.extend(process.stdout.readlines())
        process.wait(timeout=60)
    assert len(lines) >= 2
    for line in lines:
        assert json.loads(line)["jsonrpc"] == "2.0", line
    answer = json.loads(lines[1])
    assert answer["id"] == 2 and answer["result"]["isError"] is False


async def test_a_store_that_cannot_be_opened_is_a_tool_error_naming_it(home: Home) -> None:
    store_dir = home.path / "held-store"
    held = home.with_env(MNEMO_STORE=f"chdb://{store_dir}")
    with store_held_by_another_process(store_dir) as holder_pid:
        async with mcp_client(held) as client:
            message = error_text(await client.call_tool("recall", {"query": "anything"}))
    assert f"is open in another process (pid {holder_pid})" in message


async def test_write_tools_are_refused_while_the_host_reports_plan_mode(home: Home) -> None:
    """This test process is the host of both the MCP server and the hook processes it starts
    (as Claude Code or Codex is of theirs): once its hooks report plan mode, the write tools are
    refused by the daemon itself (the PreToolUse hook is the first line, this the second)."""

    def prompt_hook(mode: str) -> None:
        payload = event_input("UserPromptSubmit", "s-plan", permission_mode=mode, prompt="plan the release")
        assert hook(home, "UserPromptSubmit", payload)[1] == 0

    async with mcp_client(home) as client:
        tabs = {"content": "Tabs in Makefiles", "type": "fact"}
        kept = structured(await client.call_tool("remember", tabs))
        await anyio.to_thread.run_sync(prompt_hook, "plan")
        calls: list[tuple[str, dict[str, Any]]] = [
            ("remember", {"content": "Spaces everywhere else", "type": "fact"}),
            ("forget", {"id": kept["id"], "reason": "changed our minds"}),
            ("keep", {"scope": "user", "action": "add", "content": "Answer briefly."}),
        ]
        for name, arguments in calls:
            assert "does not write in plan mode" in error_text(await client.call_tool(name, arguments)), name
        recalled = structured(await client.call_tool("recall", {"query": "Makefiles tabs"}))
        assert recalled["memories"][0]["memory"]["id"] == kept["id"]  # reads go on; nothing was forgotten
        # The plan approved, the next write's PreToolUse hook (allowed) brings the new mode.
        pre_tool = event_input(
            "PreToolUse", "s-plan", permission_mode="acceptEdits", tool_name="mcp__mnemo__remember"
        )
        out, code = await anyio.to_thread.run_sync(hook, home, "PreToolUse", pre_tool)
        assert (out, code) == ("", 0)
        assert structured(await client.call_tool(*calls[0]))["content"] == "Spaces everywhere else"
    # The CLI is no agent host's tool: it writes whatever mode the hooks report.
    await anyio.to_thread.run_sync(prompt_hook, "plan")
    assert "remembered" in home.mnemo("remember", "Deploys on Thursdays", "--type", "fact").stdout


def _session(
    home: Home, *requests: dict[str, Any], version: str = "2025-06-18"
) -> tuple[list[dict[str, Any]], str]:
    """One raw stdio session with mnemo-mcp: initialize (asking for protocol ``version``),
    initialized, then ``requests``; the answers in order, and what it wrote on stderr."""
    hello = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    messages = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        *({"jsonrpc": "2.0", "id": i, **r} for i, r in enumerate(requests, start=1)),
    ]
    command = [str(BIN / "mnemo-mcp")]
    pipe = subprocess.PIPE
    with subprocess.Popen(command, stdin=pipe, stdout=pipe, stderr=pipe, env=home.env) as process:
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        answers = []
        for message in messages:
            process.stdin.write(json.dumps(message).encode() + b"\n")
            process.stdin.flush()
            if "id" in message:
                answers.append(json.loads(process.stdout.readline()))
        process.stdin.close()
        log = process.stderr.read().decode()
        process.wait(timeout=30)
    return answers, log


def test_a_second_start_answers_initialize_and_tools_list_from_the_record_then_serves(home: Home) -> None:
    """The first session's initialize and tools/list answers are recorded; the next start answers
    them from the record (before the MCP SDK has loaded: mnemo.mcpserver.relay) and serves tool calls
    through the SDK as usual."""
    remember = {"name": "remember", "arguments": {"content": "Tabs", "type": "fact"}}
    ask = [{"method": "tools/list"}, {"method": "tools/call", "params": remember}]
    first, first_log = _session(home, *ask)
    assert "from the start record" not in first_log
    assert (home.path / "run" / "mcp-start.json").exists()
    second, second_log = _session(home, *ask)
    assert "initialize answered from the start record" in second_log
    assert "tools/list answered from the start record" in second_log
    assert second[0] == first[0] and second[1] == first[1]  # the same answers, ids included
    assert {t["name"] for t in second[1]["result"]["tools"]} == TOOLS
    assert second[2]["result"]["_meta"][RESULT_META]["content"] == "Tabs"  # served by the SDK


def test_a_damaged_start_record_is_set_aside_and_written_afresh(home: Home) -> None:
    """Whatever the record holds (not an object, or an initialize of another shape), the server
    starts the slow way, answers, and records afresh."""
    record = home.path / "run" / "mcp-start.json"
    record.parent.mkdir(parents=True, exist_ok=True)
    first, _ = _session(home, {"method": "tools/list"})
    for damaged in ("[1, 2]", json.dumps({**json.loads(record.read_text()), "initialize": "x"})):
        record.write_text(damaged)
        answers, log = _session(home, {"method": "tools/list"})
        assert "from the start record" not in log
        assert answers == first
        assert isinstance(json.loads(record.read_text())["initialize"], dict)


def test_hosts_asking_for_different_protocol_versions_each_start_from_the_record(home: Home) -> None:
    """Claude Code asks for 2025-11-25 and Codex for 2025-06-18: the record keeps an initialize
    answer for each, so a user of both hosts does not lose the quick start at every switch."""
    claude, codex = "2025-11-25", "2025-06-18"
    first_claude, log = _session(home, {"method": "tools/list"}, version=claude)
    assert "from the start record" not in log
    first_codex, log = _session(home, {"method": "tools/list"}, version=codex)
    assert "initialize answered from the start record" not in log  # a version not seen yet
    assert first_codex[0]["result"]["protocolVersion"] == codex
    for version, first in ((claude, first_claude), (codex, first_codex), (claude, first_claude)):
        again, log = _session(home, {"method": "tools/list"}, version=version)
        assert "initialize answered from the start record" in log, version
        assert again == first
