"""How right the code check's grades are, on labelled cases: the rules, and a model's re-judge.

    uv run --frozen python -m tools.evals.eval_code_check --cases tests/data/code_cases_fit.json
    uv run --frozen python -m tools.evals.eval_code_check --cases FILE --llm-url http://127.0.0.1:8080/v1 \\
        --model qwen2.5-coder-1.5b

``--cases FILE.json`` (repeatable): a JSON array of cases, each a memory, the file it is about as
it was when the memory was written and after a later commit, and what a person reads of it::

    {"id": "tf-timeout", "lang": "terraform", "path": "infra/lb.tf",
     "memory": "The gateway timeout is 600 s (timeout_sec in lb.tf)",
     "before": "<the whole file>", "after": "<the whole file, or null: the commit deleted it>",
     "label": "still|changed|outdated|deleted",
     "old_value": "600", "new_value": "900"}      # for changed: the number, before and after

*still*: the memory is still right of ``after``; *changed*: a number it states now has another
value there (``new_value``), and it would be right with just that number replaced; *outdated*:
wrong some other way; *deleted*: ``after`` is null.

Each case runs through the daemon's own code in a git repository made for it in a temporary
directory: ``before`` committed at ``path``, the memory anchored as ``mnemo remember`` run in the
repository anchors it (:func:`mnemo.code.anchors.anchor`), ``after`` committed (or the file
removed), then graded by :func:`mnemo.code.check.check`. The rules' answer:

- not anchored (the memory names no tracked file, or nothing of it), or refreshed, or moved:
  *still* (nothing is flagged);
- deleted: *deleted*;
- a value's line read with a new number, nothing else gone: *changed*, with that number;
- anything else flagged: *outdated*.

Printed: the confusion of label against answer; *quiet* (still cases left unflagged), *caught*
(cases that are not still, flagged), *new value right* (changed cases whose note names the
labelled new value), and the share of cases not anchored.

With ``--llm-url`` and ``--model``, the model is also asked, for every case whose file is still
there, the question mnemo's writer asked when it re-judged flagged memories (:data:`CODE`, over
the fragments of the file that share most words with the memory, as the writer showed them), and
a variant that shows it the file before and after (:data:`CODE_DIFF`): its answer at or above the
judge's threshold (0.6), else unclear. Printed per question: its confusion, how often it is right
(still or not) at the threshold and by its best answer, the rules on the same cases, and the two
ways it could help the rules — on the cases the rules flag with no reading (is the model's *still*
right there, so that it could lift a flag?), and on the cases the rules leave quiet (does it catch
what they miss?) — with seconds per question.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mnemo.code.anchors import anchor
from mnemo.code.check import check
from mnemo.distill.decide import QUESTIONS, ClosedQuestion, DecisionModel
from mnemo.distill.judge import THRESHOLD
from mnemo.distill.llm import LLM
from mnemo.distill.meter import TokenMeter
from mnemo.memories import CodeAnchor, Memory, Origin
from mnemo.numerals import as_digits

# Memories and repositories made as the tests make them.
from mnemo.vocabulary import MemoryType
from tests.helpers import committed_repo, make_memory, run_git
from tools.evals.eval_writer import fresh_store

LABELS = ("still", "changed", "outdated", "deleted")
# The question the writer asked when mnemo re-judged flagged memories with a model (removed after
# this measurement: docs/code.md), and a variant that shows the model the file before and after.
CODE = ClosedQuestion(
    "code",
    "Does the CODE, as it is now, still back the MEMORY?",
    ("still", "updated", "contradicted"),
    (
        "still: the code still says what the memory says",
        "updated: the code now holds a newer value or behaviour for what the memory describes",
        "contradicted: the code shows the memory is wrong",
    ),
)
CODE_DIFF = ClosedQuestion(
    "code_diff",
    "The file changed from BEFORE to AFTER. Is the MEMORY still right about the file AFTER the change?",
    ("still", "updated", "contradicted"),
    (
        "still: the change left what the memory says true",
        "updated: the change gave what the memory describes a new value or behaviour",
        "contradicted: the change made the memory wrong",
    ),
)
CODE_CHARS = 1_500
_WINDOW_LINES = 8
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}|\d+(?:\.\d+)?")
ANSWERS = ("still", "changed", "outdated", "deleted", "changed, wrong value")


@dataclass(frozen=True, slots=True)
class Case:
    id: str
    memory: str
    path: str
    before: str
    after: str | None
    label: str
    new_value: str
    old_value: str


@dataclass(frozen=True, slots=True)
class Graded:
    case: Case
    anchored: bool
    answer: str  # one of ANSWERS
    note: str
    new_text: str  # the file after the commit, as the model would read it ("" when deleted)


def load_cases(path: Path) -> list[Case]:
    raw = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(raw, list):
        raise ValueError(f"{path}: a JSON array of cases is expected")
    cases = []
    for n, item in enumerate(raw):
        try:
            label = item["label"]
            if label not in LABELS:
                raise ValueError(f"label {label!r} is not one of {', '.join(LABELS)}")
            if (item.get("after") is None) != (label == "deleted"):
                raise ValueError("after is null exactly when the label is deleted")
            cases.append(
                Case(
                    id=str(item["id"]),
                    memory=item["memory"],
                    path=item["path"].lstrip("/"),
                    before=item["before"],
                    after=item.get("after"),
                    label=label,
                    new_value=str(item.get("new_value") or ""),
                    old_value=str(item.get("old_value") or ""),
                )
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{path}: case {n}: {exc}") from exc
    return cases


def code_fragments(text: str, memory: str, limit: int = CODE_CHARS) -> str:
    """The windows of lines of ``text`` that share most words with ``memory``, in file order (what
    the writer showed the model)."""
    lines = text.splitlines()
    if len(text) <= limit:
        return text
    wanted = {w.lower() for w in _TOKEN.findall(memory)}
    windows = [lines[i : i + _WINDOW_LINES] for i in range(0, len(lines), _WINDOW_LINES)]
    scores = [sum(w.lower() in wanted for line in win for w in _TOKEN.findall(line)) for win in windows]
    chosen, used = [], 0
    for i in sorted(range(len(windows)), key=lambda i: -scores[i]):
        size = sum(len(line) + 1 for line in windows[i]) + 4
        if used + size <= limit:
            chosen.append(i)
            used += size
    return "\n…\n".join("\n".join(windows[i]) for i in sorted(chosen))


def grade(case: Case, workdir: Path) -> Graded:
    """``case`` through the anchor and the check, in a repository of its own under ``workdir``."""
    # A README beside the file: the repository outlives the file when a case deletes it.
    root = committed_repo(workdir / case.id, {"README.md": "# a project\n", case.path: case.before})
    file = root / case.path
    code = anchor(str(root), [case.memory])
    memory = _memory(case, code)
    if case.after is None:
        run_git(root, "rm", "-q", case.path)
    else:
        file.write_text(case.after, encoding="utf-8")
        run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "--allow-empty", "-m", "after")
    result = check(root, [memory], deadline_s=30.0)
    flag = result.flags.get(memory.id)
    if code is None or flag is None or not flag.stale:
        answer = "still"
    elif flag.kind == "deleted":
        answer = "deleted"
    elif flag.readings and not flag.missing:
        now = {r.value: r.now for r in flag.readings}
        # A label may write the old value as a word ("three"): the reading has it in digits.
        right = case.label != "changed" or now.get(as_digits(case.old_value)) == case.new_value
        answer = "changed" if right else "changed, wrong value"
    else:
        answer = "outdated"
    note = flag.note() if flag is not None and flag.stale else ""
    return Graded(case, code is not None, answer, note, case.after or "")


def _memory(case: Case, code: CodeAnchor | None) -> Memory:
    return make_memory(
        "mem_eval", case.memory, datetime.now(UTC), type=MemoryType.FACT, origin=Origin.EXPLICIT, code=code
    )


def rule_metrics(graded: Sequence[Graded]) -> dict[str, Any]:
    confusion = Counter((g.case.label, g.answer) for g in graded)
    still = [g for g in graded if g.case.label == "still"]
    moved_on = [g for g in graded if g.case.label != "still"]
    changed = [g for g in graded if g.case.label == "changed"]
    anchored = [g for g in graded if g.anchored]
    return {
        "cases": len(graded),
        "confusion": {f"{label} → {answer}": n for (label, answer), n in sorted(confusion.items())},
        "quiet": _share(sum(g.answer == "still" for g in still), len(still)),
        "caught": _share(sum(g.answer != "still" for g in moved_on), len(moved_on)),
        "new value right": _share(sum(g.answer == "changed" for g in changed), len(changed)),
        "exact": _share(sum(g.answer == g.case.label for g in graded), len(graded)),
        "not anchored": _share(sum(not g.anchored for g in graded), len(graded)),
        # What the check itself gets right, where it has an anchor to check.
        "anchored: exact": _share(sum(g.answer == g.case.label for g in anchored), len(anchored)),
        "anchored: quiet": _share(
            sum(g.answer == "still" for g in anchored if g.case.label == "still"),
            sum(g.case.label == "still" for g in anchored),
        ),
        "anchored: caught": _share(
            sum(g.answer != "still" for g in anchored if g.case.label != "still"),
            sum(g.case.label != "still" for g in anchored),
        ),
    }


def _share(n: int, of: int) -> str:
    return f"{n}/{of} ({n / of:.2f})" if of else "0/0"


def ask_model(
    graded: Sequence[Graded], llm_url: str, model: str, question: ClosedQuestion
) -> list[tuple[Graded, str, str, float]]:
    """The model's answer for each case whose file is still there: (graded, answer at the judge's
    threshold or unclear, its best answer whatever its probability, seconds)."""
    env = {"MNEMO_LLM_URL": llm_url, "MNEMO_LLM_MODEL": model, "MNEMO_LLM_TIMEOUT_S": "600"}
    env["MNEMO_LLM_DAILY_TOKEN_CAP"] = "0"
    out = []
    with fresh_store(env) as (settings, store):
        decisions = DecisionModel(
            LLM(settings, TokenMeter(store, 0)), settings, {**QUESTIONS, question.id: question}
        )
        present = [g for g in graded if g.case.after is not None]
        for n, g in enumerate(present, 1):
            after = code_fragments(g.new_text, g.case.memory)
            if question is CODE:
                context = f"MEMORY: {g.case.memory}\n\nCODE ({g.case.path} at commit 0000000):\n{after}"
            else:
                before = code_fragments(g.case.before, g.case.memory)
                context = f"MEMORY: {g.case.memory}\n\nBEFORE ({g.case.path}):\n{before}\n\nAFTER:\n{after}"
            began = time.perf_counter()
            verdict, probability = decisions.ask(question, context).best
            seconds = time.perf_counter() - began
            out.append((g, verdict if probability >= THRESHOLD else "unclear", verdict, seconds))
            print(f"\r  the model ({question.id}): {n}/{len(present)}", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
    return out


def model_metrics(asked: Sequence[tuple[Graded, str, str, float]]) -> dict[str, Any]:
    confusion = Counter((g.case.label, answer) for g, answer, _, _ in asked)

    def right(g: Graded, answer: str) -> bool:
        return (answer == "still") == (g.case.label == "still") and answer != "unclear"

    flagged_unread = [(g, a) for g, a, _, _ in asked if g.answer == "outdated"]
    quiet = [(g, a) for g, a, _, _ in asked if g.answer == "still"]
    lifts = [(g, a) for g, a in flagged_unread if a == "still"]
    catches = [(g, a) for g, a in quiet if a in ("updated", "contradicted")]
    rules_right = sum((g.answer == "still") == (g.case.label == "still") for g, *_ in asked)
    seconds = sorted(s for *_, s in asked)
    return {
        "asked": len(asked),
        "confusion": {f"{label} → {answer}": n for (label, answer), n in sorted(confusion.items())},
        "still or not, right": _share(sum(right(g, a) for g, a, _, _ in asked), len(asked)),
        "still or not, right by its best answer (no threshold)": _share(
            sum(right(g, best) for g, _, best, _ in asked), len(asked)
        ),
        "the rules on the same cases": _share(rules_right, len(asked)),
        "unclear": _share(sum(a == "unclear" for _, a, _, _ in asked), len(asked)),
        # Where the rules flag with no reading, a model's "still" would lift the flag: right when
        # the case is still, wrong (a real change hidden) otherwise.
        "lifts on rule flags without a reading": f"{sum(g.case.label == 'still' for g, _ in lifts)} right, "
        f"{sum(g.case.label != 'still' for g, _ in lifts)} wrong, of {len(flagged_unread)}",
        # Where the rules stay quiet, a model's "updated"/"contradicted" would flag: right when
        # the case is not still, a false alarm otherwise.
        "catches on rule-quiet cases": f"{sum(g.case.label != 'still' for g, _ in catches)} right, "
        f"{sum(g.case.label == 'still' for g, _ in catches)} false alarms, of {len(quiet)}",
        "seconds per question (median)": round(seconds[len(seconds) // 2], 2) if seconds else 0.0,
    }


@contextmanager
def _workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="mnemo-eval-code-") as directory:
        yield Path(directory)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", type=Path, action="append", required=True, help="labelled cases (JSON)")
    parser.add_argument("--llm-url", help="an OpenAI-compatible endpoint: also ask the model")
    parser.add_argument("--model", help="the model name the endpoint serves")
    parser.add_argument("--json", action="store_true", help="one JSON object instead of tables")
    parser.add_argument("--show", action="store_true", help="every case the rules answer wrongly")
    args = parser.parse_args(argv)
    if bool(args.llm_url) != bool(args.model):
        parser.error("--llm-url and --model go together")
    try:
        cases = [c for path in args.cases for c in load_cases(path)]
    except (OSError, ValueError) as exc:
        print(f"eval_code_check: {exc}", file=sys.stderr)
        return 2
    with _workdir() as workdir:
        graded = [grade(c, workdir) for c in cases]
    out: dict[str, Any] = {"rules": rule_metrics(graded)}
    if args.llm_url:
        for question in (CODE, CODE_DIFF):
            asked = ask_model(graded, args.llm_url, args.model, question)
            out[f"model, {question.id}"] = {"name": args.model, **model_metrics(asked)}
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    for part, metrics in out.items():
        print(f"## {part}")
        for key, value in metrics.items():
            if isinstance(value, dict):
                print(f"- {key}:")
                for k, v in value.items():
                    print(f"    {k}: {v}")
            else:
                print(f"- {key}: {value}")
    if args.show:
        print("## the rules' wrong answers")
        for g in graded:
            if g.answer != g.case.label:
                print(f"- {g.case.id} [{g.case.label} → {g.answer}] {g.case.memory}\n    note: {g.note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
