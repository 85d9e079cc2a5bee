"""The MCP server's quick start: answer ``initialize`` and ``tools/list`` while the SDK loads.

Importing the MCP SDK takes most of a second, and some hosts do not wait for it: Codex (0.147+)
gives an optional server about 1 s, then runs the turn without its tools. So ``mnemo-mcp`` relays
between the host and the SDK server, which runs on a pair of pipes:

- the first time (or after an upgrade), everything goes through to the SDK, and the SDK's own
  answers to ``initialize`` and ``tools/list`` are recorded (``run/mcp-start.json``, keyed by
  mnemo's version and the SDK's installation). ``initialize``'s answer is kept per protocol
  version the host asked for: Claude Code and Codex ask for different ones, and a single answer
  would send every other session the slow way;
- from then on the relay answers the host's ``initialize`` (for a protocol version recorded) and
  ``tools/list`` with the recorded answers at once, and hands the SDK the same ``initialize``
  itself (its answer dropped) so that the session it serves is initialised as the host's is;
  everything else waits in the pipe for the SDK. The SDK is also asked ``tools/list`` in the
  background and the record rewritten if its answer changed.

Every line from the host is read first by :mod:`mnemo.jsonrpc`: what the SDK would leave
unanswered (not JSON, too deep, not a JSON-RPC envelope) is answered here with the standard error,
and only envelopes the SDK accepts reach it, so no line silences the server.

Only the standard library here (the point is to answer before anything heavy is imported). The
process's fds 0 and 1 point at /dev/null and stderr while it serves: stray output cannot reach
the wire, which only the relay writes.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any, BinaryIO

from mnemo.jsonrpc import MAX_LINE_BYTES, read_message, too_long
from mnemo.paths import layout

RECORD_NAME = "mcp-start.json"


def _key() -> str:
    """What the record depends on: mnemo's version and the SDK's files."""
    import importlib.util  # noqa: PLC0415 - cheap; only here

    from mnemo import __version__  # noqa: PLC0415

    spec = importlib.util.find_spec("mcp")
    stamp = os.stat(spec.origin).st_mtime_ns if spec is not None and spec.origin else 0
    return f"2:{__version__}:{stamp}:{sys.version_info[:2]}"  # 2: initialize kept per version


class Relay:
    """Relays JSON-RPC lines between the host (``wire_in``/``wire_out``) and the SDK server (``to_sdk``
    /``from_sdk``), answering from the record when it can."""

    def __init__(
        self, wire_in: BinaryIO, wire_out: BinaryIO, to_sdk: BinaryIO, from_sdk: BinaryIO, path: str
    ) -> None:
        self._wire_in, self._wire_out = wire_in, wire_out
        self._to_sdk, self._from_sdk = to_sdk, from_sdk
        self._path = path
        self._key = _key()
        self._record = self._load()
        self._out_lock = threading.Lock()
        self._is_fast = False
        # The host's request id → what its answer is (slow path): "tools", or "initialize" and the
        # protocol version it asked for.
        self._pending: dict[Any, tuple[str, str]] = {}
        # The relay's own requests to the SDK: ids no host can guess, so none is taken for one.
        self._init_id = f"mnemo-start-initialize-{os.urandom(8).hex()}"
        self._tools_id = f"mnemo-start-tools-{os.urandom(8).hex()}"

    def _load(self) -> dict[str, Any]:
        try:
            with open(self._path, encoding="utf-8") as f:
                record: dict[str, Any] = json.load(f)
        except (OSError, ValueError):
            return {}
        fits = (
            isinstance(record, dict)
            and record.get("key") == self._key
            and isinstance(record.get("initialize"), dict)
        )
        return record if fits else {}

    def _save(self) -> None:
        if not {"initialize", "tools"} <= self._record.keys():
            return
        self._record["key"] = self._key
        tmp = f"{self._path}.{os.getpid()}.tmp"
        try:
            os.makedirs(os.path.dirname(self._path), mode=0o700, exist_ok=True)
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(self._record, f)
            os.replace(tmp, self._path)
        except OSError:
            pass  # a start without the record is only slower

    def _to_host(self, message: dict[str, Any] | bytes) -> None:
        data = message if isinstance(message, bytes) else json.dumps(message, separators=(",", ":")).encode()
        with self._out_lock:
            self._wire_out.write(data.rstrip(b"\n") + b"\n")
            self._wire_out.flush()

    def _to_sdk_line(self, data: bytes) -> None:
        self._to_sdk.write(data.rstrip(b"\n") + b"\n")
        self._to_sdk.flush()

    def host_to_sdk(self) -> None:
        """The host's messages: checked (:mod:`mnemo.jsonrpc`: what the SDK would leave unanswered
        is answered here), answered from the record when possible, else passed on."""
        try:
            for line in self._host_lines():
                try:
                    self._take(line)
                except OSError:
                    raise  # a pipe is gone: the host's stdout or the SDK's stdin
                except Exception:  # top level of the thread: one line must not silence the rest
                    import traceback  # noqa: PLC0415 - not for the start to pay

                    _say(traceback.format_exc())
        finally:
            self._to_sdk.close()  # the host is gone: so is the SDK's input

    def _take(self, line: bytes | int) -> None:
        incoming = too_long(line) if isinstance(line, int) else read_message(line)
        if incoming.answer is not None:
            self._to_host(incoming.answer)
        if incoming.problem:
            _say(incoming.problem)
        message = incoming.message
        if message is not None and not self._answered(message):
            self._to_sdk_line(incoming.line)

    def _host_lines(self) -> Iterator[bytes | int]:
        """The host's lines, each at most MAX_LINE_BYTES; one longer is skipped to its end and
        given as its size."""
        while line := self._wire_in.readline(MAX_LINE_BYTES + 1):
            if len(line) <= MAX_LINE_BYTES or line.endswith(b"\n"):
                yield line
                continue
            size = len(line)
            while line and not line.endswith(b"\n"):
                line = self._wire_in.readline(1 << 20)
                size += len(line)
            yield size

    def _answered(self, message: dict[str, Any]) -> bool:
        method, request_id = message.get("method"), message.get("id")
        params: dict[str, Any] = message["params"] if isinstance(message.get("params"), dict) else {}
        record = self._record
        if request_id is not None:
            self._pending.pop(request_id, None)  # an id used again: its answer is this request's
        if method == "initialize" and request_id is not None:
            requested = params.get("protocolVersion")
            answers = record.get("initialize", {}) if "tools" in record else {}
            if not self._is_fast and isinstance(requested, str) and requested in answers:
                self._is_fast = True
                self._to_host({"jsonrpc": "2.0", "id": request_id, "result": answers[requested]})
                self._to_sdk_line(json.dumps({**message, "id": self._init_id}).encode())
                _say("initialize answered from the start record")
                return True
            if isinstance(requested, str):
                self._pending[request_id] = ("initialize", requested)
            return False
        if method == "notifications/initialized" and self._is_fast:
            self._to_sdk_line(json.dumps(message).encode())
            ask = {"jsonrpc": "2.0", "id": self._tools_id, "method": "tools/list"}  # to check the record
            self._to_sdk_line(json.dumps(ask).encode())
            return True
        if method == "tools/list" and request_id is not None:
            if self._is_fast and "tools" in record and not params.get("cursor"):
                self._to_host({"jsonrpc": "2.0", "id": request_id, "result": record["tools"]})
                _say("tools/list answered from the start record")
                return True
            if not params.get("cursor"):
                self._pending[request_id] = ("tools", "")
        return False

    def sdk_to_host(self) -> None:
        """The SDK's messages: passed on, except its answers to the relay's own requests; its
        answers to initialize and tools/list are recorded."""
        for line in self._from_sdk:
            try:
                message = json.loads(line)
            except ValueError:
                message = None
            if isinstance(message, dict) and ("result" in message or "error" in message):
                request_id = message.get("id")
                if request_id == self._init_id:
                    continue
                if request_id == self._tools_id:
                    if "result" in message and self._record.get("tools") != message["result"]:
                        self._record["tools"] = message["result"]
                        self._save()
                    continue
                kind = self._pending.pop(request_id, None)
                if kind is not None and "result" in message:
                    if kind[0] == "initialize":
                        self._record.setdefault("initialize", {})[kind[1]] = message["result"]
                    else:
                        self._record["tools"] = message["result"]
                    self._save()
            self._to_host(line)


def _say(text: str) -> None:
    """A note on stderr; a closed stderr must not stop the relay (it is not the wire)."""
    try:  # noqa: SIM105 - contextlib is an import the relay's start need not pay
        sys.stderr.write(f"mnemo-mcp: {text}\n")
    except (OSError, ValueError):
        pass


def serve() -> int:
    """Serve MCP over this process's stdio: the relay on two threads, the SDK server here."""
    wire_in = os.fdopen(os.dup(0), "rb")
    wire_out = os.fdopen(os.dup(1), "wb", buffering=0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)  # stray prints go to stderr, never to the wire
    sdk_in_r, sdk_in_w = os.pipe()
    sdk_out_r, sdk_out_w = os.pipe()
    relay = Relay(
        wire_in,
        wire_out,
        os.fdopen(sdk_in_w, "wb", buffering=0),
        os.fdopen(sdk_out_r, "rb"),
        os.path.join(layout().run_dir, RECORD_NAME),
    )
    threading.Thread(target=relay.host_to_sdk, name="mcp-from-host", daemon=True).start()
    threading.Thread(target=relay.sdk_to_host, name="mcp-to-host", daemon=True).start()
    from mnemo.mcpserver.tools import serve_on  # noqa: PLC0415 - the slow import the relay covers

    return serve_on(os.fdopen(sdk_in_r, "rb"), os.fdopen(sdk_out_w, "wb"))
