"""The daemon: one per home, started on demand, detached, durable, guarded, idle-exiting."""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess

import anyio
import httpx2
import pytest

from mnemo.api.recall import RecallEpisodeRequest
from mnemo.client.launcher import daemon_pid, ensure_daemon, ping
from mnemo.client.typed import DaemonClient
from mnemo.episodes import EpisodeIn
from mnemo.errors import DaemonError, InputError, NotFoundError
from mnemo.memories import RememberRequest
from mnemo.vocabulary import MemoryType
from tests.helpers import (
    BIN,
    Home,
    daemon_pids,
    is_alive,
    process_stat,
    raw_http,
    read_answer,
    store_held_by_another_process,
    wait_until,
)


def test_socket_directory_is_private_to_the_user(home: Home) -> None:
    settings = home.settings
    ensure_daemon(settings)
    mode = stat.S_IMODE(settings.run_dir.stat().st_mode)
    assert mode == 0o700
    assert settings.run_dir.stat().st_uid == os.getuid()
    assert stat.S_ISSOCK(settings.socket_path.stat().st_mode)


def test_a_loosened_socket_directory_is_tightened_again(home: Home) -> None:
    settings = home.settings
    settings.run_dir.mkdir(parents=True)
    settings.run_dir.chmod(0o755)
    ensure_daemon(settings)
    assert stat.S_IMODE(settings.run_dir.stat().st_mode) == 0o700


def test_eight_clients_started_at_once_give_exactly_one_daemon(home: Home) -> None:
    clients = [
        subprocess.Popen(
            [str(BIN / "mnemo"), "daemon", "start"],
            env=home.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(8)
    ]
    outputs = []
    for client in clients:
        out, err = client.communicate(timeout=120)
        assert client.returncode == 0, err
        outputs.append(out)
    reported = {line.split("pid ")[1].split(",")[0] for line in outputs}
    assert len(reported) == 1
    assert daemon_pids(home.path) == [int(reported.pop())]


def test_daemon_is_detached_and_outlives_the_client_that_started_it(home: Home) -> None:
    starter = home.mnemo("daemon", "start")
    pid = int(starter.stdout.split("pid ")[1].split(",")[0])
    state, parent, session = process_stat(pid)
    assert session == pid, "the daemon leads a session of its own"
    assert parent != os.getpid(), "the daemon is not a child of the test (no zombie to reap)"
    assert state != "Z"
    assert ping(home.settings) is not None, "still answering after the starting client exited"


def test_acknowledged_appends_survive_sigkill_without_duplicates(home: Home) -> None:
    settings = home.settings
    episodes = [
        EpisodeIn(id=f"k-{i}", text=f"turn {i} of the outage review", session="kill", turn=i)
        for i in range(50)
    ]

    async def append_then_kill() -> int:
        async with DaemonClient(settings) as client:
            for episode in episodes:
                [result] = await client.append([episode])
                assert result.is_new
            pid = daemon_pid(settings)
            assert pid is not None
            os.kill(pid, signal.SIGKILL)  # right after the last acknowledgement
            return pid

    killed = anyio.run(append_then_kill)
    wait_until(lambda: not is_alive(killed), what="the killed daemon to die")

    async def after_restart() -> tuple[int, list[str], list[bool]]:
        async with DaemonClient(settings) as client:
            status = await client.status()  # starts a new daemon on the same store
            found = await client.recall_episodes(RecallEpisodeRequest(session="kill", limit=200))
            again = await client.append(episodes)
            return status.episodes, [h.episode.id for h in found.episodes], [r.is_new for r in again]

    count, ids, again_new = anyio.run(after_restart)
    assert daemon_pid(settings) != killed
    assert count == 50
    assert ids == [f"k-{i}" for i in range(50)]
    assert not any(again_new)


def test_same_episode_id_appended_twice_is_stored_once(home: Home) -> None:
    async def run() -> tuple[list[bool], int]:
        async with DaemonClient(home.settings) as client:
            first = await client.append([EpisodeIn(id="dup-1", text="hello", session="d")])
            second = await client.append([EpisodeIn(id="dup-1", text="hello", session="d")])
            both = await client.append([EpisodeIn(id="dup-2", text="a"), EpisodeIn(id="dup-2", text="a")])
            return [r.is_new for r in first + second + both], (await client.status()).episodes

    flags, count = anyio.run(run)
    assert flags == [True, False, True, False]
    assert count == 2


def test_concurrent_appends_are_all_acknowledged_and_stored(home: Home) -> None:
    async def run() -> int:
        async with DaemonClient(home.settings) as client:
            await client.ensure_started()
            async with anyio.create_task_group() as tg:
                for i in range(40):
                    tg.start_soon(client.append, [EpisodeIn(id=f"c-{i}", text=f"burst {i}", session="burst")])
            return (await client.status()).episodes

    assert anyio.run(run) == 40


def test_oversized_episode_is_refused_with_the_cap_and_nothing_else_is_lost(home: Home) -> None:
    small = home.with_env(MNEMO_MAX_EPISODE_CHARS="100")

    async def run() -> tuple[list[str | None], int]:
        async with DaemonClient(small.settings) as client:
            results = await client.append(
                [
                    EpisodeIn(id="ok-1", text="fits"),
                    EpisodeIn(id="big-1", text="x" * 101),
                    EpisodeIn(id="ok-2", text="fits too"),
                ]
            )
            return [r.error for r in results], (await client.status()).episodes

    errors, count = anyio.run(run)
    assert errors[0] is None and errors[2] is None
    assert errors[1] is not None and "101 characters; the cap is 100" in errors[1]
    assert count == 2


def test_http_api_rejects_malformed_bodies_with_the_field_named(home: Home) -> None:
    settings = home.settings
    ensure_daemon(settings)
    transport = httpx2.HTTPTransport(uds=str(settings.socket_path))
    with httpx2.Client(transport=transport, base_url="http://mnemo") as http:
        not_json = http.post("/v1/recall", content=b"{not json")
        assert not_json.status_code == 422
        assert not_json.json()["error"]["type"] == "InputError"
        bad_limit = http.post("/v1/recall", json={"query": "x", "limit": 1000})
        assert bad_limit.status_code == 422 and "limit" in bad_limit.json()["error"]["message"]
        unknown_field = http.post("/v1/memories", json={"content": "x", "type": "fact", "colour": "red"})
        assert unknown_field.status_code == 422 and "colour" in unknown_field.json()["error"]["message"]
        for namespace in ("person:a\x00b", "person:a\x1bb", "workspace:a\u0085b", "person:a b"):
            body = {"content": "x", "type": "fact", "namespace": namespace}
            refused = http.post("/v1/memories", json=body)
            assert refused.status_code == 422 and "namespace" in refused.json()["error"]["message"], namespace
        deep = http.post("/v1/recall", content=b'{"query": ' + b"[" * 500 + b"]" * 500 + b"}")
        assert deep.status_code == 422 and "nested deeper than 64 levels" in deep.json()["error"]["message"]
        for time in ("0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"):  # out of range in UTC
            body = {"episodes": [{"text": "x", "time": time}]}
            refused = http.post("/v1/episodes", json=body)
            assert refused.status_code == 422 and "outside the years 1 to 9999" in refused.text, time
        split = http.post("/v1/recall", content=b'{"query": "deploy \\ud83d day"}')
        assert split.status_code == 200, split.text  # a lone surrogate, repaired


def test_bodies_over_the_cap_are_413_before_they_are_read_and_queries_are_validated(home: Home) -> None:
    settings = home.settings
    ensure_daemon(settings)
    # The head says 64 MB and a byte; no byte of the body is sent, the answer comes all the same.
    answer = raw_http(
        settings.socket_path, b"POST /v1/episodes HTTP/1.1\r\nhost: m\r\ncontent-length: 67108865\r\n\r\n"
    )
    assert answer.startswith(b"HTTP/1.1 413 ")
    assert b'"TooLargeError"' in answer and b"over the 67,108,864 byte limit" in answer
    transport = httpx2.HTTPTransport(uds=str(settings.socket_path))
    with httpx2.Client(transport=transport, base_url="http://mnemo") as http:
        for query in (
            "namespace=person:a%00b",
            "namespace=team:x",
            "namespace=person:a%20b",
            "namespace=person:a%0A",
        ):
            bad = http.get(f"/v1/review?{query}")
            assert bad.status_code == 422 and "namespace: must be" in bad.json()["error"]["message"], query
        assert http.get("/v1/review?namespace=person:tester").status_code == 200


def test_half_sent_requests_are_answered_408_and_closed_and_the_daemon_serves_on(home: Home) -> None:
    settings = home.with_env(MNEMO_DAEMON_READ_TIMEOUT_S="1").settings
    ensure_daemon(settings)
    partial = [b"", b"POST /v1/recall HTTP/1.1\r\nhost: m", b"GET /v1/health HTTP/1.1\r\n"]
    short_body = b'POST /v1/recall HTTP/1.1\r\nhost: m\r\ncontent-length: 1000\r\n\r\n{"query": "x'
    opened = []
    for n in range(300):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(30)
        sock.connect(str(settings.socket_path))
        sock.sendall(short_body if n % 4 == 3 else partial[n % 4])
        opened.append(sock)
    answers = []
    for sock in opened:  # each is closed by the daemon (recv sees the end), none waits forever
        with sock:
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
            answers.append(data)
    assert all(a.startswith(b"HTTP/1.1 408 ") for a in answers), {a[:20] for a in answers}
    assert b"did not arrive whole within 1 s" in answers[3]
    assert ping(settings) is not None
    # Behind a whole request on a kept-alive connection: the first is answered, the second timed out.
    pipelined = b"GET /v1/health HTTP/1.1\r\nhost: m\r\n\r\nPOST /v1/recall HTTP/1.1\r\nhost: m\r\n"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        sock.connect(str(settings.socket_path))
        sock.sendall(pipelined)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    assert data.startswith(b"HTTP/1.1 200 ") and b"HTTP/1.1 408 " in data
    # An idle kept-alive connection is not a half-sent request: still open past the bound.
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(str(settings.socket_path))
        sock.sendall(b"GET /v1/health HTTP/1.1\r\nhost: m\r\n\r\n")
        sock.settimeout(30)
        assert read_answer(sock).startswith(b"HTTP/1.1 200 ")
        sock.settimeout(2.5)  # past the 1 s bound: nothing comes, the connection stays open
        with pytest.raises(TimeoutError):
            sock.recv(65536)
        sock.settimeout(30)
        sock.sendall(b"GET /v1/health HTTP/1.1\r\nhost: m\r\n\r\n")
        assert read_answer(sock).startswith(b"HTTP/1.1 200 ")


def test_client_maps_daemon_errors_back_to_their_classes(home: Home) -> None:
    async def run() -> None:
        async with DaemonClient(home.settings) as client:
            with pytest.raises(NotFoundError, match="no memory has the id 'mem_x'"):
                await client.forget("mem_x", "because")
            memory = await client.remember(
                RememberRequest(content="Use pnpm, not npm", type=MemoryType.PREFERENCE)
            )
            with pytest.raises(InputError, match="reason"):
                await client.forget(memory.id, "")

    anyio.run(run)


def test_a_store_held_by_another_process_gives_a_clear_error(home: Home) -> None:
    store_dir = home.path / "held-store"
    held = home.with_env(MNEMO_STORE=f"chdb://{store_dir}")
    with store_held_by_another_process(store_dir) as holder_pid:
        with pytest.raises(DaemonError, match=f"is open in another process \\(pid {holder_pid}\\)"):
            ensure_daemon(held.settings)
        cli = held.mnemo("status", check=False)
        assert cli.returncode == 1
        assert "open in another process" in cli.stderr
    # Once the holder is gone, the same store opens and nothing in it was lost.
    assert ensure_daemon(held.settings)["store"] == f"chdb://{store_dir}"


def test_daemon_exits_after_its_idle_period(home: Home) -> None:
    quick = home.with_env(MNEMO_DAEMON_IDLE_S="0.5")
    pid = ensure_daemon(quick.settings)["pid"]
    assert isinstance(pid, int)
    wait_until(lambda: not is_alive(pid), what="the idle daemon to exit")  # the period is not asserted
    assert not quick.settings.socket_path.exists()
    assert daemon_pid(quick.settings) is None


def test_daemon_stop_and_status_commands(home: Home) -> None:
    assert home.mnemo("daemon", "status", check=False).returncode == 3
    started = home.mnemo("daemon", "start").stdout
    assert "running, pid" in started
    assert "running, pid" in home.mnemo("daemon", "status").stdout
    assert "stopped mnemo daemon" in home.mnemo("daemon", "stop").stdout
    assert home.mnemo("daemon", "status", check=False).returncode == 3
    assert "was not running" in home.mnemo("daemon", "stop").stdout


def test_client_restarts_a_daemon_that_went_away_between_calls(home: Home) -> None:
    async def run() -> str:
        async with DaemonClient(home.settings) as client:
            await client.ensure_started()
            await client.status()  # leaves a kept-alive connection that the daemon will close
            pid = daemon_pid(home.settings)
            assert pid is not None
            os.kill(pid, signal.SIGTERM)
            with anyio.fail_after(30):
                while is_alive(pid):
                    await anyio.sleep(0.01)
            # Not safe to repeat: it must not be written into the dead connection.
            memory = await client.remember(
                RememberRequest(content="CI runs on two cores", type=MemoryType.FACT)
            )
            return memory.id

    assert anyio.run(run).startswith("mem_")


_BLAS_THREADS = """
import ctypes
{entry}
import numpy

maps = open("/proc/self/maps").read().splitlines()
path = next((line.split()[-1] for line in maps if "openblas" in line.lower()), None)
lib = ctypes.CDLL(path) if path else None
names = ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_", "openblas_get_num_threads")
getter = next((getattr(lib, name) for name in names if lib is not None and hasattr(lib, name)), None)
print(getter() if getter else "none")
"""


def _blas_threads(entry: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    code = _BLAS_THREADS.format(entry=entry)
    return subprocess.run(
        [str(BIN / "python"), "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()


def test_the_daemon_process_runs_numpy_blas_on_one_thread() -> None:
    """OpenBLAS's idle workers spin after each call: the daemon's entry module makes it one
    thread before anything can import numpy (OpenBLAS reads the setting only then)."""
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core: OpenBLAS uses one thread anyway")
    if not os.path.exists("/proc/self/maps"):
        pytest.skip("the loaded libraries are read from /proc (Linux)")
    alone = _blas_threads("")
    if alone == "none":
        pytest.skip("numpy is not linked against OpenBLAS here")
    assert int(alone) > 1  # the control: numpy on its own takes every core
    assert _blas_threads("import mnemo.daemon.__main__") == "1"


def test_the_daemon_loads_the_openai_sdk_only_when_a_model_is_configured(home: Home) -> None:
    """The SDK is ~500 modules: a daemon that runs no writer (no llm_url) leaves it unloaded."""
    code = (
        "import sys\n"
        "import mnemo.daemon.__main__, mnemo.daemon.server\n"
        "from mnemo.config import load_settings\n"
        "from mnemo.distill.llm import LLM\n"
        "print('openai' in sys.modules)\n"
        "settings = load_settings().model_copy(update={'llm_url': 'http://127.0.0.1:9', 'llm_model': 'm'})\n"
        "LLM(settings, meter=None)  # no call is made\n"
        "print('openai' in sys.modules)\n"
    )
    loaded = subprocess.run(
        [str(BIN / "python"), "-c", code], env=home.env, capture_output=True, text=True, check=False
    )
    assert loaded.stdout.split() == ["False", "True"], loaded.stderr


def test_mnemo_daemon_run_is_the_very_entry_a_client_starts(home: Home) -> None:
    # Not the daemon run inside the CLI's process (which skipped the entry's one BLAS thread):
    # the command becomes `python -m mnemo.daemon`, the same process, in the foreground.
    foreground = subprocess.Popen(
        [str(BIN / "mnemo"), "daemon", "run"],
        env=home.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: ping(home.settings) is not None, what="the foreground daemon")
        health = ping(home.settings)
        assert health is not None and health["pid"] == foreground.pid
        with open(f"/proc/{foreground.pid}/cmdline", "rb") as cmdline:
            argv = cmdline.read().split(b"\0")
        assert argv[1:3] == [b"-m", b"mnemo.daemon"]
    finally:
        foreground.terminate()
        foreground.wait(timeout=30)
