"""Real Claude Code and Codex sessions that their owners committed to public repositories: the
data the writer's precision is measured on (docs/benchmarks/writer.md, "The writer on real sessions").

The transcripts are not in this repository (most of their repositories carry no licence);
``tests/data/real_sessions/manifest.jsonl`` names each one — repository, commit, path, sha256 —
and whether it is in the *fit* part (what rules were chosen on) or the *blind* part (repositories
kept apart, scored at the end). ``labels/`` holds, per session, what careful colleagues who saw
neither our rules nor the writer's output marked worth remembering, in their own words.

    python -m tools.evals.real_sessions restore --mirror /work/.mirror     # git snapshots already here
    python -m tools.evals.real_sessions restore                             # or from GitHub (raw)
    python -m tools.evals.real_sessions render --out /tmp/rendered         # readable text, for labellers
    python -m tools.evals.real_sessions lines --part fit > lines.jsonl      # person's lines, labelled

``restore`` writes ``<dir>/raw/<id>.jsonl`` (default dir ``~/.cache/mnemo/real_sessions``) and
refuses any file whose sha256 differs from the manifest's. ``render`` writes each session as the
turns mnemo reads from it (:mod:`mnemo.transcripts`): the person's lines whole, each tool run on a
line, answers cut to 1,500 characters. ``lines`` writes each person's line as
tools/fit/fit_durable.py reads them: *durable* when a label that the person said cites its turn.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

from mnemo import transcripts
from tools import REPO

DATA = REPO / "tests" / "data" / "real_sessions"
MANIFEST = DATA / "manifest.jsonl"
DEFAULT_DIR = Path.home() / ".cache" / "mnemo" / "real_sessions"
PARTS = ("fit", "blind", "blind2", "blind3", "blind4", "blind5")  # the manifest's parts, split by repository
ANSWER_CHARS = 1_500


def manifest(part: str = "all") -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in MANIFEST.read_text().splitlines() if line.strip()]
    return [r for r in rows if part in ("all", r["part"])]


def raw_path(root: Path, row: dict[str, Any]) -> Path:
    return root / "raw" / f"{row['id']}.jsonl"


def _from_mirror(mirror: Path, row: dict[str, Any]) -> bytes | None:
    git_dir = mirror / row["repo"].replace("/", "+") / "repo"
    if not git_dir.exists():
        return None
    done = subprocess.run(
        ["git", f"--git-dir={git_dir}", "show", f"{row['commit']}:{row['path']}"],
        capture_output=True,
        check=False,
    )
    return done.stdout if done.returncode == 0 else None


def _from_github(row: dict[str, Any]) -> bytes:
    url = f"https://raw.githubusercontent.com/{row['repo']}/{row['commit']}/{row['path']}"
    with urllib.request.urlopen(url, timeout=60) as response:
        return bytes(response.read())


def restore(root: Path, mirror: Path | None, part: str) -> int:
    """Each session's transcript, checked against its sha256; the count that could not be had."""
    missing = 0
    for row in manifest(part):
        target = raw_path(root, row)
        if target.exists() and hashlib.sha256(target.read_bytes()).hexdigest() == row["sha256"]:
            continue
        try:
            data = (_from_mirror(mirror, row) if mirror else None) or _from_github(row)
        except OSError as exc:
            print(f"{row['id']}: not restored: {exc}", file=sys.stderr)
            missing += 1
            continue
        if hashlib.sha256(data).hexdigest() != row["sha256"]:
            print(f"{row['id']}: sha256 differs from the manifest's; not written", file=sys.stderr)
            missing += 1
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return missing


def _short(value: object, limit: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render(row: dict[str, Any], path: Path) -> str:
    transcript = transcripts.read(row["host"], path)
    lines = [f"# Session {row['id']}", f"host: {row['host']}; working directory: {transcript.cwd or '?'}", ""]
    for turn in transcript.turns:
        lines += [f"## Turn {turn.number}", "", "PERSON:", turn.prompt.strip() or "(nothing typed)", ""]
        for tool in turn.tools:
            lines.append(f"- tool {tool.name}: {_short(tool.input, 200)} → {_short(tool.output, 240)}")
        if turn.tools:
            lines.append("")
        answer = turn.answer.strip()
        if len(answer) > ANSWER_CHARS:
            answer = answer[:ANSWER_CHARS] + " …[answer cut]"
        lines += ["ASSISTANT:", answer or "(no answer)", ""]
    return "\n".join(lines)


LANGS = {"English": "en", "Spanish": "es"}  # fit_durable.py's languages; the others as "mixed"


def labelled_lines(part: str, root: Path) -> list[dict[str, str]]:
    """Every person's line of the part's labelled sessions: durable when a label the person said
    cites its turn, passing otherwise."""
    found = []
    for row in manifest(part):
        path = DATA / "labels" / row["part"] / (row["id"].replace("/", "__") + ".json")
        if not path.exists():
            continue
        labels = json.loads(path.read_text())
        cited = {
            t for w in labels.get("worth", []) if w.get("said_by") == "person" for t in w.get("turns", [])
        }
        for turn in transcripts.read(row["host"], raw_path(root, row)).turns:
            if turn.prompt.strip():
                found.append({
                    "id": f"{row['id']}#{turn.number}", "lang": LANGS.get(row["language"], "mixed"),
                    "kind": "person", "text": turn.prompt[:4_000],
                    "label": "durable" if turn.number in cited else "passing",
                })  # fmt: skip
    return found


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("command", choices=("restore", "render", "lines"))
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="where raw/ is kept")
    parser.add_argument("--mirror", type=Path, help="a folder of git snapshots, owner+name/repo")
    parser.add_argument("--part", choices=(*PARTS, "all"), default="all")
    parser.add_argument("--out", type=Path, help="render: the folder to write <id>.md into")
    args = parser.parse_args()
    if args.command == "restore":
        missing = restore(args.dir, args.mirror, args.part)
        print(f"{len(manifest(args.part)) - missing} restored or present, {missing} missing")
        sys.exit(1 if missing else 0)
    if args.command == "lines":
        for line in labelled_lines(args.part, args.dir):
            sys.stdout.write(json.dumps(line, ensure_ascii=False) + "\n")
        return
    out = args.out or args.dir / "rendered"
    for row in manifest(args.part):
        target = out / f"{row['id']}.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(render(row, raw_path(args.dir, row)))
    print(f"rendered {len(manifest(args.part))} sessions into {out}")


if __name__ == "__main__":
    main()
