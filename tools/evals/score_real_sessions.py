"""Scores a run of tools/evals/eval_real_sessions.py against the labels of tests/data/real_sessions.

    python -m tools.evals.score_real_sessions RUN.json [--judged JUDGED.json] [--regate] [--json] [--show]

What the labellers marked worth remembering is matched to what the writer left (active or
waiting) by meaning: a memory answers a label when their *what* embed at a cosine of at least
``MATCH_COSINE`` (the USE embedder) or share half their words, each label and memory matched
once, best pairs first. Without ``--judged``, a memory that answers no label counts as junk — a
proxy, which counts against the writer whatever a label missed. With ``--judged`` (verdicts by a
helper who read each session, its labels and what the writer left, per session id:
``{"memories": {memory id: {"verdict": "worth" | "junk", "grounded": true | false}},
"labels": {label index: memory id}}``), junk, grounding and which memory answers which label
are theirs.

``--regate`` applies today's rules of what may become a memory (:mod:`mnemo.distill.gate`) to what
the run left, as if the writer had applied them before the judge (the episodes each memory cites
read again from the transcripts): what they drop is left out of every figure and counted apart.
It replays a run made before a rule changed without asking the model again; what the judge would
have done differently without the dropped drafts is not replayed.

Figures: active junk per 10 sessions; of the labels, the share answered by an active or waiting
memory, and with the right type (strict; and by kind: fact/state/event, decision/preference/
procedure/pattern, postmortem); candidates per session (median) and junk candidates per 5
sessions; active memories copying a host's wrapper text; active pairs that say the same thing;
sessions that failed or raised; the model's time per session.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np

from mnemo import transcripts
from mnemo.config import load_settings
from mnemo.distill.durable import Durability
from mnemo.distill.extract import Draft, ExtractedMemory
from mnemo.distill.gate import anchored, screen
from mnemo.distill.guard import overlap
from mnemo.distill.repeats import REPEATS, fold_repeats
from mnemo.embed import load_embedder
from mnemo.episodes import Episode, EpisodeIntake
from mnemo.importing.transcripts import transcript_episodes
from mnemo.secrets import SecretRedactor
from mnemo.vocabulary import MemoryType
from tools import REPO
from tools.evals.real_sessions import DEFAULT_DIR, manifest, raw_path

LABELS = REPO / "tests" / "data" / "real_sessions" / "labels"
MATCH_COSINE = 0.6
SAME_COSINE = 0.92  # two active memories this close say the same thing
KINDS = {"fact": "fact", "state": "fact", "event": "fact", "decision": "rule", "preference": "rule",
         "procedure": "rule", "pattern": "rule", "postmortem": "postmortem"}  # fmt: skip
WRAPPERS = re.compile(
    r"user (?:selected|opened) (?:the )?(?:lines|file)|may or may not be related to the current task|"
    r"StructuredOutput|<ide_|<bash-|<command-|<system-reminder|environment_context|"
    r"My request for Codex|You \*\*MUST\*\* consider the user input",
    re.IGNORECASE,
)


def labels_of(session_id: str, labels_dir: Path) -> dict[str, Any] | None:
    path = labels_dir / (session_id.replace("/", "__") + ".json")
    return json.loads(path.read_text()) if path.exists() else None


class Matcher:
    def __init__(self) -> None:
        settings = load_settings({"MNEMO_HOME": "/tmp/mnemo-score", "MNEMO_EMBEDDER": "use-multilingual-v3"})
        embedder = load_embedder(settings)
        assert embedder is not None
        self._embedder = embedder
        self.durability = Durability.for_embedder(embedder)

    def pairs(self, labels: list[str], memories: list[str]) -> list[tuple[int, int, float]]:
        """(label, memory, score) matched one to one, best first."""
        if not labels or not memories:
            return []
        a = self._embedder.embed_documents(labels).astype(np.float64)
        b = self._embedder.embed_documents(memories).astype(np.float64)
        a /= np.linalg.norm(a, axis=1, keepdims=True)
        b /= np.linalg.norm(b, axis=1, keepdims=True)
        cos = a @ b.T
        scored = []
        for i, label in enumerate(labels):
            for j, memory in enumerate(memories):
                score = max(float(cos[i, j]), overlap(label, memory) - 0.1 + MATCH_COSINE - 0.4)
                if cos[i, j] >= MATCH_COSINE or overlap(label, memory) >= 0.5:
                    scored.append((i, j, score))
        used_l, used_m, found = set(), set(), []
        for i, j, score in sorted(scored, key=lambda t: -t[2]):
            if i not in used_l and j not in used_m:
                used_l.add(i)
                used_m.add(j)
                found.append((i, j, score))
        return found

    def same(self, memories: list[str]) -> int:
        """Pairs among ``memories`` that say the same thing."""
        if len(memories) < 2:
            return 0
        v = self._embedder.embed_documents(memories).astype(np.float64)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        cos = v @ v.T
        norm = [" ".join(m.lower().split()) for m in memories]
        return sum(
            1
            for i in range(len(memories))
            for j in range(i + 1, len(memories))
            if cos[i, j] >= SAME_COSINE or norm[i] == norm[j]
        )


def episodes_of(session_id: str, root: Path) -> dict[str, Episode]:
    """The episodes `mnemo import` makes of a session's transcript, by id."""
    row = next(r for r in manifest() if r["id"] == session_id)
    transcript = transcripts.read(row["host"], raw_path(root, row))
    intake = EpisodeIntake(max_chars=100_000, default_namespace="workspace:eval", redactor=SecretRedactor())
    return {e.id: intake.accept(e) for e in transcript_episodes(transcript, "eval", 100_000)}


def regated(session: dict[str, Any], matcher: Matcher, root: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The session's memories (and the drafts the run's gate dropped, taken as the judge would
    have added them) today's gate keeps, and why each other one is dropped: their sources
    anchored, repeats folded, then screened, as the writer does. A draft the run itself folded
    into an earlier one stays folded: the run's output does not keep the batch's order, and read
    in another order the repeat, not the draft it repeats, would be screened (the fold's rule is
    the same since the run of a44b1cc)."""
    episodes = episodes_of(session["id"], root)
    conversation = list(episodes.values())
    folded = [d for d in session["memories"] if (d.get("reason") or "").startswith(REPEATS)]
    memories = [
        {**d, "status": "active"} if d["status"] == "dropped" else d
        for d in session["memories"]
        if d not in folded
    ]
    drafts = []
    for memory in memories:
        extracted = ExtractedMemory(type=MemoryType(memory["type"]), what=memory["what"], why=memory["why"],
                                    how=memory["how"], sources=memory["sources"] or ["-"])  # fmt: skip
        drafts.append(anchored(Draft(extracted, False, False), conversation))
    drafts, repeated = fold_repeats(drafts)
    kept, dropped = [], []
    for at, (memory, draft) in enumerate(zip(memories, drafts, strict=True)):
        cited = [episodes[s] for s in draft.memory.sources if s in episodes]
        kind = MemoryType(memory["type"])
        verdict = screen(memory["what"], kind, cited, matcher.durability)
        if at in repeated:
            dropped.append(f"{memory['what'][:90]} — repeats {repeated[at]}")
        elif verdict.keeps:
            waits = verdict.waits and memory["status"] == "active"  # as the writer's policy would
            kept.append({**memory, "status": "candidate"} if waits else memory)
        else:
            dropped.append(f"{memory['what'][:90]} — {verdict.reason}")
    return kept, dropped + [f"{d['what'][:90]} — {d['reason']} (in the run)" for d in folded]


def score(
    run: dict[str, Any],
    labels_dir: Path,
    judged: dict[str, Any] | None,
    show: bool,
    regate: Path | None = None,
) -> dict[str, Any]:
    matcher = Matcher()
    totals: dict[str, Any] = {"sessions": 0, "unlabelled": 0, "active": 0, "waiting": 0, "active_junk": 0,
                              "waiting_junk": 0, "labels": 0, "answered": 0, "answered_type": 0,
                              "answered_kind": 0, "wrapper_copies": 0, "same_pairs": 0, "ungrounded": 0,
                              "failed_sessions": 0, "raised": 0}  # fmt: skip
    seconds, waiting_counts = [], []
    by_host: dict[str, dict[str, int]] = {}
    for session in run["sessions"]:
        labelled = labels_of(session["id"], labels_dir)
        if labelled is None:
            totals["unlabelled"] += 1
            continue
        totals["sessions"] += 1
        worth = labelled.get("worth", [])
        if regate is not None:
            memories, dropped = regated(session, matcher, regate)
            for line in dropped if show else []:
                print(f"  {session['id'][:50]} DROPPED {line}")
        else:
            memories = [m for m in session["memories"] if m["status"] != "dropped"]
            dropped = [m["what"] for m in session["memories"] if m["status"] == "dropped"]
        totals["dropped"] = totals.get("dropped", 0) + len(dropped)
        active = [m for m in memories if m["status"] == "active"]
        waiting = [m for m in memories if m["status"] == "candidate"]
        totals["active"] += len(active)
        totals["waiting"] += len(waiting)
        waiting_counts.append(len(waiting))
        seconds.append(session["seconds"])
        totals["failed_sessions"] += bool(session["failed_batches"])
        totals["raised"] += bool(session["error"])
        verdicts = (judged or {}).get(session["id"])
        if verdicts is not None:  # a helper's reading: which memory answers which label
            index = {m["id"]: j for j, m in enumerate(memories)}
            labels = verdicts.get("labels", {})
            matched = [(int(i), index[m], 1.0) for i, m in labels.items() if m in index]
        else:
            matched = matcher.pairs([w["what"] for w in worth], [m["what"] for m in memories])
        by_memory = {j: i for i, j, _ in matched}
        totals["labels"] += len(worth)
        totals["answered"] += len(matched)
        totals["answered_type"] += sum(worth[i]["type"] == memories[j]["type"] for i, j, _ in matched)
        totals["answered_kind"] += sum(
            KINDS.get(worth[i]["type"]) == KINDS.get(memories[j]["type"]) for i, j, _ in matched
        )
        junk_active = 0
        for j, memory in enumerate(memories):
            verdict = (verdicts or {}).get("memories", {}).get(memory["id"])
            junk = verdict["verdict"] == "junk" if verdict else j not in by_memory
            key = "active_junk" if memory["status"] == "active" else "waiting_junk"
            totals[key] += junk
            junk_active += junk and memory["status"] == "active"
            if memory["status"] == "active":
                totals["wrapper_copies"] += bool(WRAPPERS.search(" ".join((memory["what"], memory["why"]))))
                totals["ungrounded"] += bool(verdict and not verdict.get("grounded", True))
            if show:
                mark = "JUNK" if junk else f"~ {worth[by_memory[j]]['what'][:70]}" if j in by_memory else "ok"
                head = f"  {session['id'][:50]} [{memory['status'][:4]} {memory['type']}]"
                print(f"{head} {memory['what'][:90]}  → {mark}")
        totals["same_pairs"] += matcher.same([m["what"] for m in active])
        host = by_host.setdefault(session["host"], {"sessions": 0, "active": 0, "active_junk": 0, "labels": 0,
                                                    "answered": 0})  # fmt: skip
        host["sessions"] += 1
        host["active"] += len(active)
        host["labels"] += len(worth)
        host["answered"] += len(matched)
        host["active_junk"] += junk_active
        if show:
            for i, w in enumerate(worth):
                if i not in {i for i, _, _ in matched}:
                    print(f"  {session['id'][:50]} MISSED [{w['type']}] {w['what'][:100]}")
    n = max(1, totals["sessions"])
    figures = {
        **totals,
        "active_junk_per_10_sessions": round(10 * totals["active_junk"] / n, 2),
        "waiting_junk_per_5_sessions": round(5 * totals["waiting_junk"] / n, 2),
        "waiting_per_session_median": statistics.median(waiting_counts) if waiting_counts else 0,
        "labels_answered": round(totals["answered"] / max(1, totals["labels"]), 3),
        "labels_answered_right_type": round(totals["answered_type"] / max(1, totals["labels"]), 3),
        "labels_answered_right_kind": round(totals["answered_kind"] / max(1, totals["labels"]), 3),
        "seconds_median": statistics.median(seconds) if seconds else 0,
        "seconds_p95": sorted(seconds)[int(0.95 * (len(seconds) - 1))] if seconds else 0,
        "seconds_max": max(seconds, default=0),
        "junk_by": "judged" if judged else "unmatched (proxy)",
        "by_host": by_host,
    }
    return figures


def read_judged(path: Path) -> dict[str, Any]:
    """Verdicts by session id: a JSON file of them, or a folder of one file a session."""
    if path.is_file():
        found: dict[str, Any] = json.loads(path.read_text())
        return found
    return {(d := json.loads(f.read_text()))["id"]: d for f in sorted(path.glob("*.json"))}


def write_packets(run: dict[str, Any], out: Path, regate: Path | None) -> None:
    """Per session, the memories the run left (after today's gate with ``regate``), for a judge."""
    out.mkdir(parents=True, exist_ok=True)
    matcher = Matcher() if regate is not None else None
    for session in run["sessions"]:
        if regate is not None and matcher is not None:
            memories, _ = regated(session, matcher, regate)
        else:
            memories = [m for m in session["memories"] if m["status"] != "dropped"]
        shown = [{k: m[k] for k in ("id", "status", "type", "what", "why", "how")} for m in memories]
        packet = {"id": session["id"], "memories": shown}
        (out / (session["id"].replace("/", "__") + ".json")).write_text(
            json.dumps(packet, ensure_ascii=False, indent=1)
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("run", type=Path)
    parser.add_argument("--labels", type=Path, help="the labels' folder (default: the run's part's)")
    parser.add_argument(
        "--judged", type=Path, help="a helper's verdicts: a JSON file, or a folder of one file a session"
    )
    parser.add_argument("--packets", type=Path, help="write, per session, what a judging helper reads")
    parser.add_argument("--show", action="store_true", help="print each memory and missed label")
    parser.add_argument("--regate", action="store_true", help="apply today's gate to what the run left")
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="where real_sessions.py restored raw/")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    run = json.loads(args.run.read_text())
    labels_dir = args.labels or LABELS / run["part"]
    judged = read_judged(args.judged) if args.judged else None
    if args.packets:
        write_packets(run, args.packets, args.dir if args.regate else None)
        return
    figures = score(run, labels_dir, judged, args.show, args.dir if args.regate else None)
    if args.json:
        print(json.dumps(figures, indent=1))
        return
    for key, value in figures.items():
        print(f"{key:32} {value}")
    if figures["unlabelled"]:
        print(f"({figures['unlabelled']} sessions of the run have no labels)", file=sys.stderr)


if __name__ == "__main__":
    main()
