"""The writer on real sessions: each transcript of tests/data/real_sessions imported into one store
as `mnemo import` would, distilled as the daemon's writer does, and what it left written out.

    python -m tools.evals.real_sessions restore --mirror /work/.mirror     # the transcripts, once
    python -m tools.evals.eval_real_sessions --llm-url http://127.0.0.1:8080/v1 --model qwen2.5-coder-1.5b \\
        --part fit --out /tmp/fit-run.json [--keep /tmp/fit-home] [--only ID ...]
    python -m tools.evals.score_real_sessions /tmp/fit-run.json

Sessions are distilled one at a time, in the manifest's order, into one store (as a person's
sessions accumulate in theirs), with the shipped weights and ``approval_policy`` auto. For each
session the output has the model time and calls, the batches that failed and why, and every memory
it left active or waiting (candidate), with its sources, and each draft the writer's gate dropped
(status ``dropped``, with the rule). A session whose distillation raised is
recorded with the error and the run goes on (so that a tree whose writer stalls can be measured
too: ``--per-session-s`` bounds a session's time, by a timer that stops the model client).
``--keep HOME`` keeps the store (``MNEMO_HOME=HOME mnemo audit`` reads it).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from mnemo import transcripts
from mnemo.config import load_settings
from mnemo.distill.backends import open_model
from mnemo.distill.decide import DecisionModel
from mnemo.distill.meter import TokenMeter
from mnemo.distill.writer import Distiller
from mnemo.embed import load_embedder
from mnemo.episodes import EpisodeIntake
from mnemo.importing.transcripts import transcript_episodes
from mnemo.index.live import RecallEngine
from mnemo.secrets import SecretRedactor
from mnemo.store import open_store
from mnemo.vocabulary import MemoryStatus
from tools.evals.real_sessions import DEFAULT_DIR, PARTS, manifest, raw_path


def run(args: argparse.Namespace, home: Path) -> dict[str, Any]:
    env = {
        "MNEMO_HOME": str(home),
        "MNEMO_LLM_URL": args.llm_url,
        "MNEMO_LLM_MODEL": args.model,
        "MNEMO_EMBEDDER": args.embedder,
        "MNEMO_LLM_DAILY_TOKEN_CAP": "0",
        "MNEMO_PERSON": "eval",
    }
    settings = load_settings(env)
    store = open_store(settings.store)
    meter = TokenMeter(store, 0)
    llm = open_model(settings, meter)
    engine = RecallEngine(load_embedder(settings))
    distiller = Distiller(store, engine, llm, DecisionModel(llm, settings))
    intake = EpisodeIntake(max_chars=settings.max_episode_chars, default_namespace="workspace:eval",
                           redactor=SecretRedactor())  # fmt: skip
    rows = [r for r in manifest(args.part) if not args.only or r["id"] in args.only]
    if args.smallest_first:  # the short sessions' figures come first
        rows.sort(key=lambda r: r["bytes"])
    sessions = []
    for at, row in enumerate(rows, 1):
        transcript = transcripts.read(row["host"], raw_path(args.dir, row))
        episodes = [
            intake.accept(e) for e in transcript_episodes(transcript, "eval", settings.max_episode_chars)
        ]
        store.append_episodes(episodes)
        session = transcript.session[:500]
        before = meter.today()
        started = time.perf_counter()
        error = ""
        timer = threading.Timer(args.per_session_s, llm.close) if args.per_session_s else None
        if timer is not None:
            timer.start()
        try:
            distiller.distil_session(session)
        except Exception as exc:  # recorded, and the run goes on
            error = f"{type(exc).__name__}: {exc}"[:500]
        finally:
            if timer is not None:
                timer.cancel()
        seconds = time.perf_counter() - started
        if error and args.per_session_s:  # the client was closed: a fresh one for the next session
            llm = open_model(settings, meter)
            distiller = Distiller(store, engine, llm, DecisionModel(llm, settings))
        after = meter.today()
        ids = {e.id for e in episodes}
        found = [m for m in _memories(store) if set(m["sources"]) & ids] + _dropped(store, session)
        failed = [b.error for b in store.failed_batches(1_000) if b.session == session]
        sessions.append({
            "id": row["id"], "part": row["part"], "host": row["host"], "session": session,
            "turns": len(transcript.turns), "episodes": len(episodes), "seconds": round(seconds, 1),
            "calls": after.calls - before.calls, "tokens": after.tokens - before.tokens,
            "error": error, "failed_batches": failed, "memories": found,
        })  # fmt: skip
        active = sum(m["status"] == "active" for m in found)
        waiting = sum(m["status"] == "candidate" for m in found)
        if args.out is not None:  # after each session: a run cut short is still read
            args.out.write_text(json.dumps({"model": args.model, "part": args.part, "sessions": sessions},
                                           ensure_ascii=False, indent=1))  # fmt: skip
        print(f"[{at}/{len(rows)}] {row['id'][:60]}: {seconds:.0f} s, {active} active, {waiting} waiting"
              + (f", failed {len(failed)}" if failed else "") + (f", ERROR {error[:120]}" if error else ""),
              file=sys.stderr, flush=True)  # fmt: skip
    store.close()
    return {"model": args.model, "part": args.part, "sessions": sessions}


def _memories(store: Any) -> list[dict[str, Any]]:
    keep = {MemoryStatus.ACTIVE, MemoryStatus.CANDIDATE}
    return [
        {
            "id": m.id, "type": m.type.value, "status": m.status.value, "what": m.what, "why": m.why,
            "how": m.how, "who": m.who, "sources": list(m.sources), "reason": m.status_reason,
        }
        for m in store.memories_page("", 100_000)
        if m.status in keep
    ]  # fmt: skip


def _dropped(store: Any, session: str) -> list[dict[str, Any]]:
    """The drafts the writer's gate dropped in ``session`` (the judge log's ``dropped`` rows)."""
    found = []
    for row in store.judge_log(10_000, session=session):
        if row.action != "dropped":
            continue
        draft = json.loads(row.detail)["memory"]
        found.append({
            "id": row.memory, "type": draft["type"], "status": "dropped", "what": draft["what"],
            "why": draft["why"], "how": draft["how"], "who": draft["who"], "sources": draft["sources"],
            "reason": row.reason,
        })  # fmt: skip
    return found


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--llm-url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--part", choices=(*PARTS, "all"), default="fit")
    parser.add_argument("--only", action="append", default=[], help="a session id (repeatable)")
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="where real_sessions.py restored raw/")
    parser.add_argument("--embedder", default="use-multilingual-v3")
    parser.add_argument(
        "--per-session-s", type=float, default=0, help="stop a session's model work after this"
    )
    parser.add_argument("--keep", type=Path, help="keep the store in this MNEMO_HOME")
    parser.add_argument("--smallest-first", action="store_true", help="distil the shortest transcripts first")
    parser.add_argument("--out", type=Path, required=True, help="the run's JSON")
    args = parser.parse_args()
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        result = run(args, args.keep)
    else:
        with tempfile.TemporaryDirectory(prefix="mnemo-real-", dir="/tmp") as home:
            result = run(args, Path(home))
    args.out.write_text(json.dumps(result, ensure_ascii=False, indent=1))
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
