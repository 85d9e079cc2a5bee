"""A caching proxy in front of an OpenAI-compatible model server, for evaluations.

    python -m tools.models.llm_cache --upstream http://127.0.0.1:8080 --port 8090 --db /tmp/answers.sqlite
    python -m tools.evals.eval_writer --llm-url http://127.0.0.1:8090/v1 --model … --scenarios …

Every POST is answered from the cache when the same path and body were asked before, else
forwarded to the upstream server and its answer (a 200 only) kept. mnemo asks at temperature 0,
so a cached answer is the one the model gave to the same request; what it buys is an exact A/B: a
rule changed between two runs of an evaluation is measured on the same model answers wherever the
requests are the same, and only requests the change alters reach the model. On a 2-core machine
the model is the evaluation's bottleneck (a scenario set takes tens of minutes), so a lever costs
minutes instead of a full run.

What it cannot show: the run-to-run variation of the model itself (llama.cpp's answers at
temperature 0 can differ between runs). A figure reported as the writer's should come from one
run against the model itself, or say that it was replayed. GET requests are forwarded uncached.
On exit it prints the hits and misses it served.
"""

from __future__ import annotations

import argparse
import hashlib
import signal
import sqlite3
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


class Answers:
    """The cache: request key → (status, content type, body), in SQLite, shared by threads."""

    def __init__(self, path: Path) -> None:
        self._db = sqlite3.connect(path, check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, type TEXT, body BLOB)")
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> tuple[str, bytes] | None:
        with self._lock:
            row = self._db.execute("SELECT type, body FROM answers WHERE key = ?", (key,)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return row[0], row[1]

    def put(self, key: str, content_type: str, body: bytes) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO answers VALUES (?, ?, ?)", (key, content_type, body))
            self._db.commit()


def request_key(path: str, body: bytes) -> str:
    return hashlib.sha256(path.encode() + b"\0" + body).hexdigest()


def handler(upstream: str, answers: Answers, timeout: float) -> type[BaseHTTPRequestHandler]:
    class Proxy(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            key = request_key(self.path, body)
            cached = answers.get(key)
            if cached is not None:
                self._answer(200, cached[0], cached[1])
                return
            status, content_type, answer = self._forward("POST", body)
            if status == 200:
                answers.put(key, content_type, answer)
            self._answer(status, content_type, answer)

        def do_GET(self) -> None:
            self._answer(*self._forward("GET", None))

        def _forward(self, method: str, body: bytes | None) -> tuple[int, str, bytes]:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_HEADERS}
            request = urllib.request.Request(upstream + self.path, data=body, headers=headers, method=method)
            try:
                with urllib.request.urlopen(request, timeout=timeout) as response:
                    return response.status, response.headers.get("Content-Type", ""), response.read()
            except urllib.error.HTTPError as exc:
                return exc.code, exc.headers.get("Content-Type", ""), exc.read()
            except OSError as exc:
                return 502, "text/plain", f"llm_cache: upstream {upstream}: {exc}".encode()

        def _answer(self, status: int, content_type: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type or "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Proxy


def _stop(*_: object) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--upstream", required=True, help="the model server, e.g. http://127.0.0.1:8080")
    parser.add_argument("--port", type=int, default=8090)
    parser.add_argument("--db", type=Path, required=True, help="the cache (SQLite; created if missing)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds to wait for the upstream")
    args = parser.parse_args(argv)
    answers = Answers(args.db)
    server = ThreadingHTTPServer(
        ("127.0.0.1", args.port), handler(args.upstream.rstrip("/"), answers, args.timeout)
    )
    print(f"llm_cache: http://127.0.0.1:{args.port} → {args.upstream} (cache {args.db})", file=sys.stderr)
    signal.signal(signal.SIGTERM, _stop)  # a terminated proxy still prints its counts
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        print(f"llm_cache: {answers.hits} hits, {answers.misses} misses", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
