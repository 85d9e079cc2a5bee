"""Memory tied to code under a real repository's everyday churn: 22 memories anchored to 14 files
of many kinds, 55 commits that reformat, extend and edit those files around what the memories
name, and 5 that change a value a memory states. Checked as a person's sessions would meet it:
the code check at every tenth commit (each HEAD moves on from the last one the daemon followed),
then each memory's own question through recall, and a prompt through the hook.

A memory whose values stand must come first for its own question, unflagged, however much its
file moved around it; one whose value changed must come first or second, its note naming the new
value, with the memory that has it proposed for review — and approving that proposal closes it.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

from mnemo.workspace import workspace_namespace
from tests.helpers import Home, committed_repo, context_of, event_input, hook, run_git

FILES = {
    "infra/lb.tf": (
        'resource "aws_lb" "gateway" {\n  name = "gateway"\n  timeout_sec = 600\n  idle_timeout = 60\n}\n\n'
        'resource "aws_lb_target_group" "api" {\n  port = 8080\n  health_interval = 30\n}\n'
    ),
    "k8s/worker.yaml": (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: worker\nspec:\n  replicas: 4\n"
        "  template:\n    spec:\n      containers:\n        - name: worker\n          resources:\n"
        "            requests:\n              memory: 256Mi\n"
        "            limits:\n              memory: 512Mi\n"
    ),
    "app/settings.py": (
        '"""Application settings."""\n\nMAX_UPLOAD_MB = 25\nSESSION_TTL_S = 3600\nPAGE_SIZE = 50\n'
        "DEBUG = False\n"
    ),
    "config/cache.json": (
        '{\n  "cache": {\n    "ttlSeconds": 300\n  },\n  "locks": {\n    "ttlSeconds": 300\n  }\n}\n'
    ),
    "Makefile": "test:\n\tpytest -q\n\nlint:\n\truff check --line-length=120 .\n",
    "Dockerfile": 'FROM python:3.11-slim\nWORKDIR /app\nCOPY . .\nEXPOSE 8080\nCMD ["gunicorn", "app:app"]\n',
    "Procfile": "web: gunicorn app:app --workers 8\n",
    "deploy/nginx.conf": (
        "server {\n    listen 443 ssl;\n    client_max_body_size 30m;\n    keepalive_timeout 65;\n"
        "    location / {\n        proxy_pass http://api;\n    }\n}\n"
    ),
    "db/pool.toml": "[pool]\nmax_connections = 40\n\n[replica]\nmax_connections = 10\n",
    "scripts/backup.sh": '#!/bin/sh\nRETENTION_DAYS=14\npg_dump "$DATABASE_URL" > backup.sql\n',
    ".github/workflows/ci.yml": (
        "name: ci\non: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    timeout-minutes: 30\n"
        "    steps:\n      - uses: actions/checkout@v4\n      - run: make test\n"
    ),
    "src/retry.go": (
        'package client\n\nimport "time"\n\nconst maxAttempts = 5\n\nvar baseDelay = 200 * time.Millisecond\n'
    ),
    "app/rate.py": "RATE_LIMIT_PER_MIN = 120\nBURST = 20\n",
    "docker-compose.yml": 'services:\n  redis:\n    image: redis:7\n    ports:\n      - "6379:6379"\n',
}

# (name, memory, its own question)
MEMORIES = [
    (
        "lb-timeout",
        "The gateway timeout is 600 s (timeout_sec in infra/lb.tf)",
        "what is the gateway timeout?",
    ),
    (
        "lb-idle",
        "The load balancer drops idle connections after 60 s (idle_timeout in lb.tf)",
        "when does the load balancer drop idle connections?",
    ),
    ("replicas", "The worker deployment runs 4 replicas (k8s/worker.yaml)", "how many worker replicas run?"),
    (
        "mem-limit",
        "Worker pods are capped at a 512Mi memory limit (k8s/worker.yaml)",
        "what is the memory limit of worker pods?",
    ),
    (
        "upload",
        "Uploads are capped at 25 MB (MAX_UPLOAD_MB in app/settings.py)",
        "how large can an upload be?",
    ),
    (
        "session",
        "Login sessions expire after 3600 seconds (SESSION_TTL_S in app/settings.py)",
        "when do login sessions expire?",
    ),
    (
        "page",
        "API list endpoints return 50 items per page (PAGE_SIZE in app/settings.py)",
        "how many items per page do list endpoints return?",
    ),
    (
        "cache",
        "Cached responses live for 300 seconds (cache.ttlSeconds in config/cache.json)",
        "how long do cached responses live?",
    ),
    (
        "make-test",
        "Tests run with make test, which calls pytest -q (see Makefile)",
        "how do I run the tests?",
    ),
    (
        "lint",
        "make lint runs ruff with a 120-column line length (Makefile)",
        "what line length does the linter use?",
    ),
    (
        "port",
        "The API container listens on port 8080 (EXPOSE in the Dockerfile)",
        "which port does the API container listen on?",
    ),
    (
        "python",
        "The image is built on Python 3.11 (Dockerfile)",
        "which Python version is the image built on?",
    ),
    (
        "workers",
        "Gunicorn runs 8 workers in production (see the Procfile)",
        "how many gunicorn workers run in production?",
    ),
    (
        "body",
        "nginx accepts request bodies up to 30 MB (client_max_body_size in deploy/nginx.conf)",
        "what is the largest request body nginx accepts?",
    ),
    (
        "keepalive",
        "nginx keeps client connections alive for 65 seconds (keepalive_timeout in nginx.conf)",
        "how long does nginx keep client connections alive?",
    ),
    (
        "pool",
        "The primary database pool allows 40 connections (max_connections under [pool] in db/pool.toml)",
        "how many connections does the primary database pool allow?",
    ),
    (
        "backup",
        "Backups are kept for 14 days (RETENTION_DAYS in scripts/backup.sh)",
        "how long are backups kept?",
    ),
    (
        "ci",
        "CI jobs time out after 30 minutes (timeout-minutes in .github/workflows/ci.yml)",
        "when do CI jobs time out?",
    ),
    (
        "attempts",
        "The HTTP client tries a request 5 times (maxAttempts in src/retry.go)",
        "how many times does the HTTP client try a request?",
    ),
    (
        "delay",
        "The HTTP client waits 200 ms before retrying (baseDelay in src/retry.go)",
        "how long does the HTTP client wait before retrying?",
    ),
    (
        "rate",
        "The public API allows 120 requests per minute per key (RATE_LIMIT_PER_MIN in app/rate.py)",
        "how many requests per minute does the public API allow?",
    ),
    (
        "redis",
        "Redis listens on port 6379 in local development (docker-compose.yml)",
        "which port does redis use locally?",
    ),
]

# (after which churn commit, memory, file, the edit (a pattern and its replacement), the new value)
CHANGES = [
    (8, "lb-timeout", "infra/lb.tf", (r'("gateway" \{[^}]*timeout_sec\s*=\s*)600', r"\g<1>900"), "900"),
    (19, "replicas", "k8s/worker.yaml", (r"replicas: 4", "replicas: 6"), "6"),
    (27, "session", "app/settings.py", (r"(SESSION_TTL_S\s*=\s*)3600", r"\g<1>7200"), "7200"),
    (38, "cache", "config/cache.json", (r'("cache": \{\n\s*"ttlSeconds": )300', r"\g<1>600"), "600"),
    (46, "pool", "db/pool.toml", (r"(\[pool\]\nmax_connections\s*=\s*)40", r"\g<1>60"), "60"),
]
CHURN_COMMITS = 55


@dataclass(frozen=True)
class Churn:
    """Everyday edits of one kind of file that leave what the memories name where it stands."""

    comment: str  # how a line is commented out ("" for JSON: no comments)
    blocks: list[str]  # blocks a commit appends (numbers in them may repeat a memory's value)


CHURN = {
    ".tf": Churn(
        "#",
        [
            'resource "aws_s3_bucket" "logs{n}" {{\n  bucket = "logs-{n}"\n  timeout_sec = 600\n}}\n',
            'variable "zone_{n}" {{\n  default = {n}\n}}\n',
        ],
    ),
    ".yaml": Churn("#", []),
    ".py": Churn(
        "#", ["\n\ndef helper_{n}(value):\n    return value * {n}\n", "FEATURE_{n}_ENABLED = True\n"]
    ),
    ".json": Churn("", []),
    "Makefile": Churn("#", ["\nformat{n}:\n\truff format --line-length=120 src{n}\n"]),
    "Dockerfile": Churn("#", ["RUN echo step {n}\n"]),
    "Procfile": Churn("#", ["worker{n}: celery -A app worker --concurrency {n}\n"]),
    ".conf": Churn("#", []),
    ".toml": Churn("#", ["\n[extra_{n}]\nmax_connections = {n}\n"]),
    ".sh": Churn("#", ['echo "backup step {n}"\n']),
    ".yml": Churn("#", []),
    ".go": Churn("//", ["\nfunc helper{n}() int {{ return {n} }}\n"]),
}


def _kind(path: str) -> str:
    name = Path(path).name
    return name if name in CHURN else Path(path).suffix


def _realigned(text: str) -> str:
    """`key = value` runs aligned on their `=`, as terraform fmt and black-like tools do."""
    lines = text.split("\n")
    out: list[str] = []
    run: list[tuple[str, str, str]] = []

    def flush() -> None:
        width = max((len(k) for _, k, _ in run), default=0)
        out.extend(f"{indent}{key.ljust(width)} = {value}" for indent, key, value in run)
        run.clear()

    for line in lines:
        match = re.fullmatch(r"(\s*)([A-Za-z_][\w.-]*)\s*=\s*(.+)", line)
        if match and (not run or run[0][0] == match.group(1)):
            run.append((match.group(1), match.group(2), match.group(3)))
            continue
        flush()
        if match:
            run.append((match.group(1), match.group(2), match.group(3)))
        else:
            out.append(line)
    flush()
    return "\n".join(out)


def _churn(path: str, text: str, n: int, rng: random.Random) -> str:
    """One everyday edit of ``text``: a comment, a new block, a reformat or a YAML/JSON/conf key."""
    edited = _edit(path, text, n, rng)
    return edited if edited != text else text + f"{CHURN[_kind(path)].comment} churn {n}\n"


def _edit(path: str, text: str, n: int, rng: random.Random) -> str:
    kind = CHURN[_kind(path)]
    choice = rng.randrange(4)
    if kind.comment and choice == 0:
        lines = text.split("\n")
        at = rng.randrange(len(lines))
        return "\n".join([*lines[:at], f"{kind.comment} note {n}: reviewed", *lines[at:]])
    if kind.blocks and choice in (1, 2):
        block = rng.choice(kind.blocks).format(n=n)
        return _realigned(text + block) if path.endswith((".tf", ".toml", ".py")) else text + block
    if path.endswith((".yaml", ".yml")):
        return (
            text.replace("metadata:\n", f'metadata:\n  labels:\n    churn{n}: "{n}"\n', 1)
            if "metadata:\n" in text
            else text + f"# churn {n}\n"
        )
    if path.endswith(".json"):
        return text.replace("{\n", f'{{\n  "churn{n}": {{\n    "ttlSeconds": {n}\n  }},\n', 1)
    if path.endswith(".conf"):
        return text.replace(
            "    location / {", f"    location /c{n} {{\n        return {n};\n    }}\n    location / {{", 1
        )
    return (
        _realigned(text) if path.endswith((".tf", ".toml", ".py")) else text + f"{kind.comment} churn {n}\n"
    )


def _commit(repo: Path, path: str, text: str, message: str) -> None:
    (repo / path).write_text(text)
    run_git(repo, "commit", "-q", "-am", message)


def test_memories_keep_their_place_through_churn_and_a_changed_value_is_noted_and_proposed(
    home: Home, tmp_path: Path
) -> None:
    words = home.with_env(MNEMO_EMBEDDER="none")  # words only: no vector arrives mid-test
    repo = committed_repo(tmp_path / "shop", FILES)
    ns = workspace_namespace(str(repo))
    ids: dict[str, str] = {}
    for name, text, _ in MEMORIES:
        made = json.loads(
            words.mnemo("remember", text, "--type", "fact", "--namespace", ns, "--json", cwd=repo).stdout
        )
        assert made["code"] is not None, f"{name} is not anchored"
        ids[name] = made["id"]
    values = {"lb-timeout": "600", "replicas": "4", "session": "3600", "cache": "300", "pool": "40"}
    for name, value in values.items():
        memory = json.loads(
            words.mnemo(
                "recall", dict((n, q) for n, _, q in MEMORIES)[name], "--namespace", ns, "--json"
            ).stdout
        )
        anchored = next(h["memory"]["code"] for h in memory["memories"] if h["memory"]["id"] == ids[name])
        assert value in anchored["files"][0]["values"], name

    rng = random.Random(43)
    paths = list(FILES)
    changes = {change[0]: change for change in CHANGES}
    changed: set[str] = set()
    for n in range(CHURN_COMMITS):
        path = paths[n % len(paths)]
        _commit(repo, path, _churn(path, (repo / path).read_text(), n, rng), f"churn {n} in {path}")
        if n in changes:
            _, name, file, (pattern, replacement), _ = changes[n]
            before = (repo / file).read_text()
            assert re.search(pattern, before), f"{name}: the churn moved what the change edits"
            _commit(repo, file, re.sub(pattern, replacement, before, count=1), name)
            changed.add(ids[name])
        if n % 10 == 9:  # a session starts: the daemon follows what still holds, flags what does not
            checked = json.loads(words.mnemo("check-code", str(repo), "--json").stdout)
            assert checked["complete"]
            stale = {f["memory"] for f in checked["flagged"] if f["stale"]}
            assert stale == changed, f"after commit {n}: {stale ^ changed}"
    assert len(changed) == len(CHANGES)

    expected_new = {ids[name]: new for _, name, _, _, new in CHANGES}
    for name, _, question in MEMORIES:
        hits = json.loads(words.mnemo("recall", question, "--namespace", ns, "--json").stdout)["memories"]
        order = [h["memory"]["id"] for h in hits]
        if ids[name] in expected_new:
            assert ids[name] in order[:2], f"{name}: {order}"
            note = hits[order.index(ids[name])]["outdated"]
            assert "now has" in note and f"{expected_new[ids[name]]} (was " in note, f"{name}: {note}"
        else:
            assert order[0] == ids[name], f"{name}: {[h['memory']['what'] for h in hits[:3]]}"
            assert hits[0]["outdated"] == ""

    # The hooks inject in recall's order, the note on the line.
    prompt = event_input("UserPromptSubmit", "s-churn", cwd=str(repo), prompt="what is the gateway timeout?")
    stdout, code = hook(words, "UserPromptSubmit", prompt)
    line = next(x for x in context_of(stdout).splitlines() if x.startswith(f"- [{ids['lb-timeout']}]"))
    assert code == 0 and "(may be outdated: infra/lb.tf now has timeout_sec = 900 (was 600)" in line, line

    # Each changed memory is proposed with its new value; approving one closes the memory it replaces.
    queue = json.loads(words.mnemo("review", "list", "--json").stdout)["memories"]
    proposals = {m["replaces"]: m for m in queue if m["replaces"]}
    assert set(proposals) == changed
    lb = proposals[ids["lb-timeout"]]
    assert lb["what"] == "The gateway timeout is 900 s (timeout_sec in infra/lb.tf)"
    assert lb["code"]["files"][0]["values"] == ["900"]  # anchored where the check read it
    run_git(repo, "merge-base", "--is-ancestor", lb["code"]["commit"], "HEAD")
    words.mnemo("review", "approve", lb["id"])
    hits = json.loads(
        words.mnemo("recall", "what is the gateway timeout?", "--namespace", ns, "--json").stdout
    )["memories"]
    assert hits[0]["memory"]["id"] == lb["id"] and not hits[0]["outdated"]
    old = json.loads(
        words.mnemo("recall", "gateway timeout 600", "--namespace", ns, "--history", "--json").stdout
    )["memories"]
    closed = next(h["memory"] for h in old if h["memory"]["id"] == ids["lb-timeout"])
    assert closed["status"] == "closed" and closed["closed_by"] == lb["id"]
